#include "snowflake/coord/recycle_pool.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <thread>

namespace snowflake::coord {

namespace {

constexpr std::size_t kCreatesPerMulti = 128;
constexpr int kMaxAttempts = 5;  // re-reads after a race before giving up for now
constexpr auto kLockPoll = std::chrono::milliseconds(50);

bool is_race(const ZkError& e) {
  return e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node || e.code == ZkErrc::node_exists;
}

bool is_unsure(const ZkError& e) {
  return e.code == ZkErrc::connection_loss || e.code == ZkErrc::operation_timeout;
}

std::optional<std::uint32_t> parse_id(const std::string& name, std::uint32_t max_id) {
  const auto id = worker_id_of_node(name);
  if (!id || *id > max_id) return std::nullopt;
  return id;
}

CoordError lost(const std::string& path, std::string_view why) {
  return {CoordErrc::lost, fmt::format("{} {}", path, why)};
}

}  // namespace

RecyclePool::RecyclePool(std::string root, std::uint32_t max_worker_id)
    : pool_(root + "/pool"),
      inuse_(pool_ + "/inuse"),
      notuse_(pool_ + "/notuse"),
      lock_(pool_ + "/init-lock"),
      max_worker_id_(max_worker_id),
      random_(std::random_device{}()) {}

Result<void, CoordError> RecyclePool::ensure(ZkSession& zk, std::chrono::milliseconds patience) {
  for (const auto& path : {inuse_, notuse_}) {
    if (auto made = zk.ensure_path(path); !made) return CoordError::from(made.error());
  }
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    auto pool = zk.get(pool_);
    if (!pool) return CoordError::from(pool.error());
    const auto state = nlohmann::json::parse(pool.value().data, nullptr, false);
    if (state.is_object() && state.value("complete", false)) return outcome::success();

    // Claims start only once the pool is complete, so whoever holds the lock
    // sees every node that exists and nothing moves while it fills the gaps.
    auto locked = zk.create(lock_, "", CreateMode::ephemeral);
    if (locked) return fill(zk);
    if (locked.error().code != ZkErrc::node_exists) return CoordError::from(locked.error());
    if (std::chrono::steady_clock::now() >= deadline) {
      return CoordError{CoordErrc::zookeeper,
                        fmt::format("another daemon is still filling the pool ({} exists)", lock_)};
    }
    std::this_thread::sleep_for(kLockPoll);
  }
}

Result<void, CoordError> RecyclePool::fill(ZkSession& zk) {
  std::set<std::uint32_t> present;
  for (const auto& dir : {notuse_, inuse_}) {
    auto names = zk.children(dir);
    if (!names) return CoordError::from(names.error());
    for (const auto& name : names.value()) {
      if (auto id = parse_id(name, max_worker_id_)) present.insert(*id);
    }
  }
  std::vector<ZkOp> batch;
  const std::string free_data = encode(NotuseData{});
  const auto flush = [&]() -> Result<void, CoordError> {
    if (auto done = zk.multi(batch); !done) {
      // A lost connection may have applied it: create one by one, where
      // "exists" is fine.
      for (const auto& op : batch) {
        auto made = zk.create(op.path, op.data);
        if (!made && made.error().code != ZkErrc::node_exists) return CoordError::from(made.error());
      }
    }
    batch.clear();
    return outcome::success();
  };
  for (std::uint32_t id = 0;; ++id) {
    if (!present.contains(id)) batch.push_back(ZkOp::create(notuse_path(id), free_data));
    if (batch.size() == kCreatesPerMulti) {
      BOOST_OUTCOME_TRYV(flush());
    }
    if (id == max_worker_id_) break;
  }
  BOOST_OUTCOME_TRYV(flush());
  const std::string complete =
      nlohmann::json{{"size", std::uint64_t{max_worker_id_} + 1}, {"complete", true}}.dump();
  if (auto set = zk.set(pool_, complete, -1); !set) return CoordError::from(set.error());
  (void)zk.remove(lock_, -1);  // else it goes with our session
  return outcome::success();
}

Result<std::int32_t, CoordError> RecyclePool::move_count(ZkSession& zk) {
  auto stat = zk.exists(inuse_);
  if (!stat) return CoordError::from(stat.error());
  if (!stat.value()) return CoordError{CoordErrc::zookeeper, fmt::format("{} is missing", inuse_)};
  return stat.value()->version;
}

Result<std::pair<InuseData, NodeStat>, CoordError> RecyclePool::read_owned(
    ZkSession& zk, const std::string& path, const OwnerToken& owner) {
  auto node = zk.get(path);
  if (!node) {
    if (node.error().code == ZkErrc::no_node) return lost(path, "does not exist any more");
    return CoordError::from(node.error());
  }
  const auto data = decode_inuse(node.value().data);
  if (!data || data->owner != owner) return lost(path, "belongs to another owner");
  return std::pair{*data, node.value().stat};
}

Result<PoolClaim, CoordError> RecyclePool::read_claim(ZkSession& zk, std::uint32_t id,
                                                      const OwnerToken& owner) {
  const std::string path = inuse_path(id);
  BOOST_OUTCOME_TRY(node, read_owned(zk, path, owner));
  const NodeStat& s = node.second;
  return PoolClaim{id, path, node.first, s.version, s.czxid, s.mtime_ms};
}

Result<PoolClaim, CoordError> RecyclePool::claim(ZkSession& zk, InuseData data) {
  if (unsure_claim_) {
    auto earlier = read_claim(zk, *unsure_claim_, data.owner);
    if (earlier) {
      unsure_claim_.reset();
      return earlier;
    }
    if (earlier.error().code != CoordErrc::lost) return earlier.error();
    unsure_claim_.reset();
  }
  auto names = zk.children(notuse_);
  if (!names) return CoordError::from(names.error());
  std::vector<std::uint32_t> free;
  for (const auto& name : names.value()) {
    if (auto id = parse_id(name, max_worker_id_)) free.push_back(*id);
  }
  if (!free.empty()) {
    // A random start spreads concurrent claimers over the pool.
    std::rotate(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(random_() % free.size()),
                free.end());
  }
  const InuseData requested = data;
  for (const std::uint32_t id : free) {
    auto node = zk.get(notuse_path(id));
    if (!node) {
      if (node.error().code == ZkErrc::no_node) continue;  // just taken
      return CoordError::from(node.error());
    }
    data = requested;
    if (const auto old = decode_notuse(node.value().data)) data.floor = std::max(data.floor, old->floor);
    auto moved = zk.multi({ZkOp::remove(notuse_path(id), node.value().stat.version),
                           ZkOp::create(inuse_path(id), encode(data)), ZkOp::set(inuse_, "", -1)});
    if (moved) return read_claim(zk, id, data.owner);
    if (is_race(moved.error())) continue;  // someone else took it first
    if (is_unsure(moved.error())) {
      unsure_claim_ = id;
      auto outcome = read_claim(zk, id, data.owner);
      if (outcome) unsure_claim_.reset();
      if (outcome || outcome.error().code != CoordErrc::lost) return outcome;
      unsure_claim_.reset();
      continue;
    }
    return CoordError::from(moved.error());
  }
  return CoordError{CoordErrc::pool_exhausted,
                    fmt::format("every worker ID in {} is in use ({} IDs)", notuse_,
                                std::uint64_t{max_worker_id_} + 1)};
}

Result<PoolClaim, CoordError> RecyclePool::take_over(ZkSession& zk, std::uint32_t worker_id,
                                                     const OwnerToken& previous, InuseData data) {
  const std::string path = inuse_path(worker_id);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(count, move_count(zk));
    BOOST_OUTCOME_TRY(node, read_owned(zk, path, previous));
    const InuseData& old = node.first;
    // Our previous run may have issued up to its high-water mark; the state
    // file (in data.floor) knows a tighter bound for what came later.
    data.floor = std::max({data.floor, old.floor, old.hwm});
    auto moved = zk.multi({ZkOp::set(path, encode(data), node.second.version),
                           ZkOp::set(inuse_, "", count)});
    if (moved) return read_claim(zk, worker_id, data.owner);
    if (is_unsure(moved.error())) {
      auto outcome = read_claim(zk, worker_id, data.owner);
      if (outcome || outcome.error().code != CoordErrc::lost) return outcome;
      continue;  // not applied (the node still carries `previous`): try again
    }
    if (!is_race(moved.error())) return CoordError::from(moved.error());
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing during takeover", path)};
}

Result<void, CoordError> RecyclePool::heartbeat(ZkSession& zk, PoolClaim& claim, std::int64_t ts,
                                                std::int64_t hwm) {
  InuseData next = claim.data;
  next.ts = ts;
  next.hwm = hwm;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // The write goes through only if no move happened since this check that
    // the node is ours: no reclaim-and-claim can slip in between.
    BOOST_OUTCOME_TRY(count, move_count(zk));
    BOOST_OUTCOME_TRY(node, read_owned(zk, claim.path, claim.data.owner));
    // Same path but another create: reclaimed and claimed again since.
    if (node.second.czxid != claim.czxid) {
      return lost(claim.path, "was reclaimed and given to another owner");
    }
    // Still our token, at a later version: an earlier write of ours whose
    // answer a lost connection swallowed. Nobody else writes our token.
    claim.version = node.second.version;
    auto written =
        zk.multi({ZkOp::check(inuse_, count), ZkOp::set(claim.path, encode(next), claim.version)});
    if (written) {
      claim.data = next;
      claim.version = written.value()[1].version;
      claim.mtime_ms = written.value()[1].mtime_ms;
      return outcome::success();
    }
    const ZkError& e = written.error();
    if (e.path == inuse_ && e.code == ZkErrc::bad_version) continue;  // a move elsewhere: read again
    if (e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node) continue;  // read what happened
    return CoordError::from(e);  // connection loss and the like: the next try reads the outcome
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the pool kept moving during our heartbeat of {}", claim.path)};
}

Result<int, CoordError> RecyclePool::reclaim_stale(ZkSession& zk, std::int64_t zk_now_ms,
                                                   std::chrono::milliseconds reclaim_after,
                                                   std::uint32_t our_worker_id) {
  // Read the move count before any node: a move made after our readings
  // changes it, and the multi below then fails instead of acting on them.
  BOOST_OUTCOME_TRY(count, move_count(zk));
  auto names = zk.children(inuse_);
  if (!names) return CoordError::from(names.error());
  int moved = 0;
  for (const auto& name : names.value()) {
    const auto id = parse_id(name, max_worker_id_);
    if (!id || *id == our_worker_id) continue;
    auto node = zk.get(inuse_path(*id));
    if (!node) {
      if (node.error().code == ZkErrc::no_node) continue;
      return CoordError::from(node.error());
    }
    const NodeStat& s = node.value().stat;
    if (zk_now_ms - s.mtime_ms <= reclaim_after.count()) continue;
    // Its owner stopped issuing by its lease, long ago; the next owner must
    // still start above anything it may have issued.
    const auto old = decode_inuse(node.value().data);
    const std::int64_t floor = old ? old->last_possible_ms() : zk_now_ms;
    auto done = zk.multi({ZkOp::remove(inuse_path(*id), s.version),
                          ZkOp::create(notuse_path(*id), encode(NotuseData{floor})),
                          ZkOp::set(inuse_, "", count)});
    if (!done) {
      if (is_race(done.error()) || is_unsure(done.error())) break;  // the next pass reads afresh
      return CoordError::from(done.error());
    }
    ++moved;
    ++count;
  }
  return moved;
}

Result<void, CoordError> RecyclePool::release(ZkSession& zk, const PoolClaim& claim,
                                              std::int64_t floor) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(count, move_count(zk));
    BOOST_OUTCOME_TRY(node, read_owned(zk, claim.path, claim.data.owner));
    const NodeStat& s = node.second;
    if (s.czxid != claim.czxid) return lost(claim.path, "was reclaimed and given to another owner");
    auto done = zk.multi({ZkOp::remove(claim.path, s.version),
                          ZkOp::create(notuse_path(claim.worker_id), encode(NotuseData{floor})),
                          ZkOp::set(inuse_, "", count)});
    if (done) return outcome::success();
    if (!is_race(done.error()) && !is_unsure(done.error())) return CoordError::from(done.error());
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing during release", claim.path)};
}

}  // namespace snowflake::coord
