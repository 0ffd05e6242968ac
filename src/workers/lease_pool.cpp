#include "snowflake/workers/lease_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "snowflake/base/sha256.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

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

LeasePool::LeasePool(LeasePoolSettings settings)
    : settings_(std::move(settings)), pool_(settings_.pool_root, settings_.max_worker_id) {
  // A named pool's reaper is the lease service's (lease_service.hpp): a
  // node stays past its lease + the margin, whatever reclaim_after says.
  pool_.set_lease_margins(settings_.margin, std::chrono::milliseconds(0));
}

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

std::int64_t LeasePool::first_after(std::int64_t floor) const {
  if (!settings_.layout) {
    // The next whole second: no unit of a second or less that the floor's
    // instant is in starts after it.
    constexpr std::int64_t kSecond = 1000;
    return (std::max<std::int64_t>(floor, 0) / kSecond + 1) * kSecond;
  }
  const IdLayout& layout = *settings_.layout;
  // Nothing before the epoch: a worker ID never used starts at unit 0.
  const std::int64_t unit = std::max<std::int64_t>(layout.unit_of_ms(floor) + 1, 0);
  return layout.unit_start_ms(unit);
}

bool LeasePool::too_short(const LeaseTerms& terms) const {
  if (!settings_.layout) return terms.max_timestamp_ms < terms.first_timestamp_ms;
  return settings_.layout->unit_of_ms(terms.max_timestamp_ms) <
         settings_.layout->unit_of_ms(terms.first_timestamp_ms);
}

Result<std::int64_t, CoordError> LeasePool::root_bound(ZkSession& zk) const {
  BOOST_OUTCOME_TRY(root, zk.get(settings_.root));
  std::int64_t bound = INT64_MIN;
  // The floor's ms is the start of the unit of the largest ID migrated:
  // nothing in that unit (first_after moves past it).
  // A named pool's IDs are in other ID spaces: the migration floor (of the
  // cluster's) is not theirs.
  if (const auto floor = recorded_floor(root.data); floor && settings_.layout) {
    bound = std::max(bound, floor->ms);
  }
  if (const auto fence = recorded_fence(root.data)) bound = std::max(bound, fence->until_ms);
  return bound;
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
                                               std::chrono::milliseconds max_wait,
                                               std::optional<std::string> given_token) {
  // Daemons that restart give their worker IDs back and claim again: a few
  // stay theirs, or leases could leave them none.
  // Counted by the directory's stat, not a listing (65,536 names in a
  // 16-bit pool); a named pool reserves none.
  if (settings_.reserved > 0) {
    BOOST_OUTCOME_TRY(dir, zk.exists(tree::notuse_dir(settings_.pool_root)));
    const auto free = dir ? static_cast<std::uint32_t>(std::max(0, dir->num_children)) : 0U;
    if (free <= settings_.reserved) {
      return CoordError{CoordErrc::pool_exhausted,
                        fmt::format("{} worker ID(s) free, and leases leave {} to the daemons "
                                    "(leases.reserved_worker_ids)",
                                    free, settings_.reserved)};
    }
  }
  BOOST_OUTCOME_TRY(bound, root_bound(zk));
  std::string token = given_token ? std::move(*given_token) : fresh_token();
  const InuseData data{owner_of(holder, token), std::max<std::int64_t>(bound, 0), now_ms, 0,
                       duration.count()};
  BOOST_OUTCOME_TRY(
      claim, pool_.claim(zk, data, now_ms + max_wait.count(), std::nullopt, /*alive=*/false));
  if (claim.move_count) {
    remember(claim.worker_id, {data.owner.instance, claim.data, claim.version, claim.czxid,
                               claim.mtime_ms, *claim.move_count});
  }
  LeaseTerms terms{claim.worker_id,           duration,         first_after(claim.data.floor),
                   now_ms + duration.count(), std::move(token), settings_.worker_bits};
  // Read after our write: a floor or fence recorded before it shows here;
  // one recorded after it waits for our node (migration_floor.hpp).
  auto after = root_bound(zk);
  const bool rose = after && after.value() > claim.data.floor;
  if (!after || rose || too_short(terms)) {
    // Given back as it came: nobody was told of it.
    (void)give_back(zk, terms.worker_id, terms.token, claim.data.floor);
    if (!after) return after.error();
    if (rose) {
      return CoordError{CoordErrc::zookeeper,
                        "the cluster's migration floor or fence rose while the worker ID was "
                        "taken: ask again"};
    }
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
  const std::chrono::milliseconds asked = duration;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // Not asked: the lease's own, as granted last.
    duration = asked.count() > 0 ? asked : std::chrono::milliseconds(w.data.lease_ms);
    InuseData next = w.data;
    // The time fence never moves back: not for a shorter lease asked, nor
    // for a daemon whose clock is behind the last one's. The holder may have
    // stamped up to the last fence, and a reclaim or a give-back that does
    // not say its last stamp leaves ts + lease_ms as the floor.
    next.ts = std::max(now_ms, w.data.ts + w.data.lease_ms - duration.count());
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
    // Late by ZooKeeper's records, beyond the margin for their clocks: the
    // holder's own deadline, counted from before the last write, has
    // passed, so it stopped; it must take a new lease. The worker ID goes
    // back at once, above the last grant's fence, as a reclaim would.
    if (s.mtime_ms - w.mtime_ms > w.data.lease_ms + settings_.margin.count()) {
      (void)give_back(zk, worker_id, token,
                      std::max(w.data.last_possible_ms(), last_used_ms.value_or(0)));
      return lost(worker_id,
                  fmt::format("was renewed {} ms after the last grant of a {} ms lease "
                              "(past its end and the {} ms margin)",
                              s.mtime_ms - w.mtime_ms, w.data.lease_ms, settings_.margin.count()));
    }
    remember(worker_id, {instance, next, s.version, w.czxid, s.mtime_ms, w.move_count});
    // A migration floor or a fence recorded since the lease began: its
    // holder may have stamped below it. Not renewed, so that it runs out
    // (`pool floor` waits for that; a fence outlasts it).
    BOOST_OUTCOME_TRY(bound, root_bound(zk));
    if (bound > next.floor) {
      return lost(worker_id,
                  "began at or below the cluster's migration floor or fence, raised since: take "
                  "a new lease, which starts above it");
    }
    return LeaseTerms{worker_id,
                      duration,
                      first_after(next.floor),
                      next.ts + duration.count(),
                      {},
                      settings_.worker_bits};
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

Result<std::vector<LeasePool::Record>, CoordError> LeasePool::list(ZkSession& zk) {
  BOOST_OUTCOME_TRY(names, zk.children(pool_.inuse_dir()));
  std::vector<Record> out;
  for (const auto& name : names) {
    const auto id = worker_id_of_node(name);
    if (!id || *id > settings_.max_worker_id) continue;
    BOOST_OUTCOME_TRY(node, zk.try_get(pool_.inuse_path(*id)));
    if (!node) continue;  // moved since the listing
    auto data = decode_inuse(node->data);
    if (data && is_lease(data->owner)) out.push_back({*id, std::move(*data)});
  }
  std::sort(out.begin(), out.end(),
            [](const Record& a, const Record& b) { return a.worker_id < b.worker_id; });
  return out;
}

Result<std::int64_t, CoordError> LeasePool::forget(ZkSession& zk, std::uint32_t worker_id) {
  if (worker_id >= pool_.size()) return lost(worker_id, "is not in the pool");
  written_.erase(worker_id);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(count, pool_.move_count(zk));
    BOOST_OUTCOME_TRY(node, zk.try_get(pool_.inuse_path(worker_id)));
    if (!node) return lost(worker_id, "is not leased");
    const auto data = decode_inuse(node->data);
    if (!data || !is_lease(data->owner)) {
      return lost(worker_id, "is held by a daemon, not a lease: its own stop gives it back");
    }
    // Its holder may stamp up to its fence whatever we do here: the next
    // one starts past it, as after a reclaim.
    const std::int64_t floor = data->last_possible_ms();
    auto done = zk.multi({ZkOp::set(pool_.inuse_dir(), "", count),
                          ZkOp::remove(pool_.inuse_path(worker_id), node->stat.version),
                          ZkOp::create(pool_.notuse_path(worker_id), encode(NotuseData{floor}))});
    if (done) return floor;
    if (!is_race(done.error())) return CoordError::from(done.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the pool kept moving while forgetting worker ID {}", worker_id)};
}

}  // namespace snowflake::coord
