#include "snowflake/workers/lease_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "snowflake/base/sha256.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

constexpr std::string_view kLeaseInstancePrefix = "lease:";
constexpr int kMaxAttempts = 5;  // re-reads after a race before giving up for now

std::string fresh_token() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", random());
  return token;
}

CoordError lost(std::uint32_t worker_id, std::string_view why) {
  return {CoordErrc::lost, fmt::format("{}worker ID {} {}", kLeaseLostPrefix, worker_id, why)};
}

bool is_race(const ZkError& e) {
  return e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node ||
         e.code == ZkErrc::node_exists;
}

}  // namespace

LeasePool::LeasePool(const std::string& root, std::uint32_t max_worker_id)
    : pool_(root, max_worker_id) {}

OwnerToken LeasePool::owner_of(const std::string& holder, std::string_view token) {
  std::string digest;
  for (const std::uint8_t byte : sha256(token)) digest += fmt::format("{:02x}", byte);
  return {holder, 0, 0, std::string(kLeaseInstancePrefix) + digest};
}

bool LeasePool::is_lease(const OwnerToken& owner) {
  return owner.instance.starts_with(kLeaseInstancePrefix);
}

void LeasePool::remember(std::uint32_t worker_id, Written w) {
  // Bounded by the pool's size: one entry per worker ID.
  written_[worker_id] = std::move(w);
}

Result<LeasePool::Written, CoordError> LeasePool::read_lease(ZkSession& zk, std::uint32_t worker_id,
                                                             const std::string& instance) {
  // The count before the node: a move after this reading fails the write
  // that acts on it.
  BOOST_OUTCOME_TRY(count, pool_.move_count(zk));
  BOOST_OUTCOME_TRY(node, zk.try_get(pool_.inuse_path(worker_id)));
  if (!node) return lost(worker_id, "is not leased (given back, or reclaimed after its lease)");
  const auto data = decode_inuse(node.value().data);
  if (!data || data->owner.instance != instance) {
    return lost(worker_id, "is held by another lease or daemon now");
  }
  const NodeStat& s = node.value().stat;
  return Written{instance, *data, s.version, s.czxid, s.mtime_ms, count};
}

Result<LeaseTerms, CoordError> LeasePool::take(ZkSession& zk, const std::string& holder,
                                               std::chrono::milliseconds duration,
                                               std::int64_t now_ms,
                                               std::chrono::milliseconds max_wait) {
  std::string token = fresh_token();
  const InuseData data{owner_of(holder, token), 0, now_ms, 0, duration.count()};
  BOOST_OUTCOME_TRY(
      claim, pool_.claim(zk, data, now_ms + max_wait.count(), std::nullopt, /*alive=*/false));
  // The node's floor is the last instant an earlier owner may have used.
  LeaseTerms terms{claim.worker_id, duration, claim.data.floor + 1, now_ms + duration.count(),
                   std::move(token)};
  if (claim.move_count) {
    remember(claim.worker_id, {data.owner.instance, claim.data, claim.version, claim.czxid,
                               claim.mtime_ms, *claim.move_count});
  }
  if (terms.first_timestamp_ms > terms.max_timestamp_ms) {
    // A floor within max_wait but beyond this short a lease: nothing could
    // be stamped under it. Given back as it came.
    (void)give_back(zk, terms.worker_id, terms.token, claim.data.floor);
    return CoordError{CoordErrc::floors_ahead,
                      fmt::format("worker ID {}'s floor is past the end of a {} ms lease",
                                  terms.worker_id, duration.count())};
  }
  return terms;
}

Result<LeaseTerms, CoordError> LeasePool::renew(ZkSession& zk, std::uint32_t worker_id,
                                                std::string_view token,
                                                std::chrono::milliseconds duration,
                                                std::int64_t now_ms,
                                                std::optional<std::int64_t> last_used_ms) {
  if (worker_id >= pool_.size()) return lost(worker_id, "is not in the pool");
  const std::string instance = owner_of("", token).instance;
  const std::string path = pool_.inuse_path(worker_id);
  Written w;
  if (auto it = written_.find(worker_id); it != written_.end() && it->second.instance == instance) {
    w = it->second;  // tried as is: the write fails if anything moved since
  } else {
    BOOST_OUTCOME_TRY(read, read_lease(zk, worker_id, instance));
    w = std::move(read);
  }
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    InuseData next = w.data;
    next.ts = now_ms;
    next.hwm = std::max(w.data.hwm, last_used_ms.value_or(0));
    next.lease_ms = duration.count();
    auto written = zk.multi(
        {ZkOp::check(pool_.inuse_dir(), w.move_count), ZkOp::set(path, encode(next), w.version)});
    if (!written) {
      written_.erase(worker_id);
      if (!is_race(written.error())) return CoordError::from(written.error());
      BOOST_OUTCOME_TRY(read, read_lease(zk, worker_id, instance));
      w = std::move(read);  // renewed by another daemon, or a move elsewhere
      continue;
    }
    const NodeStat& s = written.value()[1];
    // Late by ZooKeeper's records: the holder's own deadline, counted from
    // before the last write, has passed, so it stopped; it must take a new
    // lease. The worker ID goes back at once, above the last grant's fence.
    if (s.mtime_ms - w.mtime_ms > w.data.lease_ms) {
      (void)give_back(zk, worker_id, token,
                      std::max(w.data.last_possible_ms(), last_used_ms.value_or(0)));
      return lost(worker_id, fmt::format("was renewed {} ms after the last grant of a {} ms lease",
                                         s.mtime_ms - w.mtime_ms, w.data.lease_ms));
    }
    remember(worker_id, {instance, next, s.version, w.czxid, s.mtime_ms, w.move_count});
    return LeaseTerms{worker_id, duration, next.floor + 1, now_ms + duration.count(), {}};
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the pool kept moving while renewing worker ID {}", worker_id)};
}

Result<void, CoordError> LeasePool::give_back(ZkSession& zk, std::uint32_t worker_id,
                                              std::string_view token,
                                              std::optional<std::int64_t> last_used_ms) {
  if (worker_id >= pool_.size()) return lost(worker_id, "is not in the pool");
  const std::string instance = owner_of("", token).instance;
  written_.erase(worker_id);
  bool unsure = false;  // a move of ours whose answer was lost
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto read = read_lease(zk, worker_id, instance);
    if (!read) {
      // After a lost answer the node may be gone by our own move: done.
      if (unsure && read.error().code == CoordErrc::lost) return outcome::success();
      return read.error();
    }
    const Written& w = read.value();
    // Its last stamp, as it says; not saying, the last its lease allowed.
    const std::int64_t floor = last_used_ms ? std::max({w.data.floor, w.data.hwm, *last_used_ms})
                                            : w.data.last_possible_ms();
    // A move: it bumps the count, as a daemon's release does.
    auto done = zk.multi({ZkOp::set(pool_.inuse_dir(), "", w.move_count),
                          ZkOp::remove(pool_.inuse_path(worker_id), w.version),
                          ZkOp::create(pool_.notuse_path(worker_id), encode(NotuseData{floor}))});
    if (done) return outcome::success();
    unsure = done.error().outcome_unknown();
    if (!is_race(done.error()) && !unsure) return CoordError::from(done.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the pool kept moving while giving back worker ID {}", worker_id)};
}

}  // namespace snowflake::coord
