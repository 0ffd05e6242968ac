#include "snowflake/workers/recycle_pool.hpp"
#include "snowflake/base/clock.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "pool_ops.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

constexpr std::size_t kCreatesPerMulti = 128;
// Waiting for the pool's filler: a watch on its lock wakes the waiters when
// it goes, so N daemons of a cluster's first start cost ZooKeeper a few
// requests each however long the fill takes (polls every 50 ms had 1,000
// daemons send 20,000 reads a second, which slowed the fill they waited for;
// polls up to a second apart still held 5,000 back for minutes). The
// longest wait without a look is only a backstop.
constexpr auto kLockWaitMax = std::chrono::milliseconds(5000);

bool is_complete(const std::string& pool_data) {
  const auto state = nlohmann::json::parse(pool_data, nullptr, false);
  return state.is_object() && state.value("complete", false);
}

}  // namespace

RecyclePool::RecyclePool(const std::string& root, std::uint32_t max_worker_id)
    : pool_(tree::pool(root)),
      inuse_(tree::inuse_dir(root)),
      notuse_(tree::notuse_dir(root)),
      lock_(tree::pool_init_lock(root)),
      clock_(tree::pool_clock(root)),
      reapers_(tree::pool_reapers(root)),
      claimers_(tree::pool_claimers(root)),
      alive_(root),
      max_worker_id_(max_worker_id),
      random_(std::random_device{}()),
      count_watch_(inuse_) {}

Result<void, CoordError> RecyclePool::ensure(ZkSession& zk, std::chrono::milliseconds patience) {
  // A complete pool was marked so after its directories were made: one read
  // then, not fifteen (a rollout of many daemons starts with this).
  BOOST_OUTCOME_TRY(first, zk.try_get(pool_));
  if (first && is_complete(first.value().data)) return outcome::success();
  // The directories are the filler's to make (fill()): the daemons that
  // wait for it, at a cluster's first start, only poll.
  if (!first) {
    BOOST_OUTCOME_TRY(zk.ensure_path(pool_));
  }
  const auto deadline = BootClock::now() + patience;
  bool lock_seen = false;  // held by another daemon when we last looked
  for (;;) {
    if (lock_seen) {
      // Watched while the filler works (the event bumps the session's
      // count); the pool is read once its lock is gone.
      const std::uint64_t seen = zk.node_events();
      BOOST_OUTCOME_TRY(held, zk.exists(lock_, /*watch=*/true));
      const auto now = BootClock::now();
      if (held && now < deadline) {
        zk.wait_for_node_event(
            seen, std::min(kLockWaitMax,
                           std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)));
        continue;
      }
    }
    BOOST_OUTCOME_TRY(pool, zk.get(pool_));
    if (is_complete(pool.data)) return outcome::success();

    // Claims start only once the pool is complete, so whoever holds the lock
    // sees every node that exists and nothing moves while it fills the gaps.
    auto locked = zk.create(lock_, "", CreateMode::ephemeral);
    if (locked) return fill(zk);
    if (locked.error().code != ZkErrc::node_exists) return CoordError::from(locked.error());
    // Ours already: an earlier create whose answer a lost connection hid.
    // Waiting for "the other daemon" would wait for ourselves.
    auto holder = zk.exists(lock_);
    if (!holder) return CoordError::from(holder.error());
    if (holder.value() && holder.value()->ephemeral_owner == zk.session_id()) return fill(zk);
    if (BootClock::now() >= deadline) {
      return CoordError{CoordErrc::zookeeper,
                        fmt::format("another daemon is still filling the pool ({} exists)", lock_)};
    }
    lock_seen = true;  // watched from the next look on
  }
}

Result<void, CoordError> RecyclePool::fill(ZkSession& zk) {
  for (const auto& path : {inuse_, notuse_, clock_, reapers_, claimers_, alive_.dir()}) {
    BOOST_OUTCOME_TRY(zk.ensure_path(path));
  }
  std::set<std::uint32_t> present;
  for (const auto& dir : {notuse_, inuse_}) {
    BOOST_OUTCOME_TRY(names, zk.children(dir));
    for (const auto& name : names) {
      if (auto id = pool_worker_id(name, max_worker_id_)) present.insert(*id);
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
        if (!made && made.error().code != ZkErrc::node_exists)
          return CoordError::from(made.error());
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
  BOOST_OUTCOME_TRY(zk.set(pool_, complete, -1));
  (void)zk.remove(lock_, -1);  // else it goes with our session
  return outcome::success();
}

Result<std::int32_t, CoordError> RecyclePool::move_count(ZkSession& zk) {
  return counted(zk.exists(inuse_));
}

Result<std::int32_t, CoordError> RecyclePool::watched_move_count(ZkSession& zk) {
  return counted(count_watch_.read(zk));
}

Result<std::int32_t, CoordError> RecyclePool::counted(
    const Result<std::optional<NodeStat>, ZkError>& stat) {
  if (!stat) return CoordError::from(stat.error());
  if (!stat.value()) return CoordError{CoordErrc::zookeeper, fmt::format("{} is missing", inuse_)};
  in_use_seen_ = static_cast<std::uint32_t>(std::max(0, stat.value()->num_children));
  return stat.value()->version;
}

Result<std::pair<InuseData, NodeStat>, CoordError> RecyclePool::read_owned(
    ZkSession& zk, const std::string& path, const OwnerToken& owner) {
  BOOST_OUTCOME_TRY(node, zk.try_get(path));
  if (!node) return lost(path, "does not exist any more");
  const auto data = decode_inuse(node.value().data);
  if (!data || data->owner != owner) return lost(path, "belongs to another owner");
  return std::pair{*data, node.value().stat};
}

Result<PoolClaim, CoordError> RecyclePool::read_claim(ZkSession& zk, std::uint32_t id,
                                                      const OwnerToken& owner) {
  const std::string path = inuse_path(id);
  BOOST_OUTCOME_TRY(node, read_owned(zk, path, owner));
  BOOST_OUTCOME_TRY(holder, alive_.holder(zk, id));
  const NodeStat& s = node.second;
  // The lost write created our alive node in the session that sent it; if
  // that session has ended since, the next heartbeat makes it again.
  const std::int64_t alive_session =
      holder && holder->session == zk.session_id() ? holder->session : 0;
  if (holder && alive_session == 0 && holder->owner != owner) {
    return lost(alive_.path(id), fmt::format("is held by {}", holder->describe()));
  }
  // No move count: the first heartbeat reads it.
  return PoolClaim{id,         path,    node.first, s.version,     s.czxid,
                   s.mtime_ms, s.mzxid, false,      alive_session, std::nullopt};
}

Result<ClaimPlan, CoordError> RecyclePool::plan_claim(ZkSession& zk, std::uint32_t worker_id) {
  // The count first: a move made after it (of this node or any other) fails
  // the commit, so the floor read below is still the node's when it applies.
  BOOST_OUTCOME_TRY(count, move_count(zk));
  BOOST_OUTCOME_TRY(node, zk.try_get(notuse_path(worker_id)));
  if (!node) return lost(notuse_path(worker_id), "was just taken");
  const auto free = decode_notuse(node.value().data);
  if (!free) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("{} holds \"{}\", not a floor: the last instant its earlier "
                                  "owner used is unknown, so it is never claimed (an operator who "
                                  "knows it may write {{\"floor\": <Unix ms, at or after it>}})",
                                  notuse_path(worker_id), node.value().data)};
  }
  return ClaimPlan{worker_id, count, node.value().stat.version, free->floor};
}

Result<PoolClaim, CoordError> RecyclePool::commit_claim(ZkSession& zk, const ClaimPlan& plan,
                                                        InuseData data,
                                                        const std::optional<ZkOp>& with,
                                                        bool alive) {
  const std::uint32_t id = plan.worker_id;
  data.floor = std::max(data.floor, plan.floor);
  // The count is checked, not bumped: the notuse node we remove and the
  // inuse node we create were each last deleted by a release or a reclaim,
  // and those bump it, so a reading from before either still fails here,
  // while claims of other IDs no longer fail each other or anyone's
  // heartbeat. The create's own answer carries no stat (ZooKeeper's multi
  // has no create2), so the node is written once more at version 0: that
  // set's stat is the new node's (czxid, mtime), in the same transaction.
  const std::string path = inuse_path(id);
  std::vector<ZkOp> ops{ZkOp::check(inuse_, plan.move_count),
                        ZkOp::remove(notuse_path(id), plan.notuse_version),
                        ZkOp::create(path, encode(data)), ZkOp::set(path, encode(data), 0)};
  if (alive) ops.push_back(alive_.create(id, data.owner));
  if (with) ops.push_back(*with);
  auto moved = zk.multi(ops);
  if (moved) {
    const NodeStat& t = moved.value()[3];
    return PoolClaim{id,
                     path,
                     std::move(data),
                     t.version,
                     t.czxid,
                     t.mtime_ms,
                     t.mzxid,
                     true,
                     alive ? zk.session_id() : 0,
                     plan.move_count};
  }
  const ZkError& e = moved.error();
  // Not a race on the pool: the op we were given failed (the caller's).
  if (with && e.path == with->path && !e.outcome_unknown()) return CoordError::from(e);
  if (e.path == alive_.path(id) && e.code == ZkErrc::node_exists) {
    auto holder = alive_.holder(zk, id);
    return CoordError{
        CoordErrc::held,
        fmt::format("worker ID {} is free but still held by {}", id,
                    holder && holder.value() ? holder.value()->describe() : "a session")};
  }
  if (is_race(e)) return lost(notuse_path(id), "moved since it was read");
  if (e.outcome_unknown()) {
    // Applied or not: the node tells. Unreadable now: the next claim asks first.
    unsure_claim_ = id;
    auto outcome = read_claim(zk, id, data.owner);
    if (outcome) unsure_claim_.reset();
    if (!outcome && outcome.error().code == CoordErrc::lost) {
      unsure_claim_.reset();
      return lost(notuse_path(id), "was not ours after a lost answer");
    }
    return outcome;
  }
  return CoordError::from(e);
}

Result<PoolClaim, CoordError> RecyclePool::claim(ZkSession& zk, const InuseData& data,
                                                 std::int64_t max_floor_ms,
                                                 const std::optional<ZkOp>& with, bool alive) {
  if (unsure_claim_) {
    auto earlier = read_claim(zk, *unsure_claim_, data.owner);
    if (earlier) {
      unsure_claim_.reset();
      return earlier;
    }
    if (earlier.error().code != CoordErrc::lost) return earlier.error();
    unsure_claim_.reset();
  }
  BOOST_OUTCOME_TRY(names, zk.children(notuse_));
  std::vector<std::uint32_t> free;
  for (const auto& name : names) {
    if (auto id = pool_worker_id(name, max_worker_id_)) free.push_back(*id);
  }
  in_use_seen_ = max_worker_id_ + 1 - static_cast<std::uint32_t>(free.size());
  if (!free.empty()) {
    // A random start spreads concurrent claimers over the pool.
    std::rotate(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(random_() % free.size()),
                free.end());
  }
  int far = 0;
  int held = 0;
  std::int64_t nearest_far_floor = INT64_MAX;
  for (const std::uint32_t id : free) {
    for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
      auto plan = plan_claim(zk, id);
      if (!plan) {
        if (plan.error().code == CoordErrc::unusable) {
          if (unusable_.insert(id).second)
            spdlog::error("worker ID {} skipped: {}", id, plan.error().message);
        } else if (plan.error().code != CoordErrc::lost) {
          return plan.error();
        }
        break;  // taken meanwhile, or unusable: the next one
      }
      unusable_.erase(id);
      if (std::max(data.floor, plan.value().floor) > max_floor_ms) {
        ++far;
        nearest_far_floor = std::min(nearest_far_floor, plan.value().floor);
        break;
      }
      auto claimed = commit_claim(zk, plan.value(), data, with, alive);
      if (claimed || claimed.error().code == CoordErrc::zookeeper) return claimed;
      if (claimed.error().code == CoordErrc::held) {
        ++held;
        break;
      }
      // lost: the pool moved since the plan; read this one again.
    }
  }
  if (far > 0) {
    return CoordError{
        CoordErrc::floors_ahead,
        fmt::format("{} free worker ID(s) have floors too far ahead of the wall clock "
                    "(the nearest is {} ms beyond what we may wait out)",
                    far, nearest_far_floor - max_floor_ms)};
  }
  return CoordError{
      CoordErrc::pool_exhausted,
      fmt::format("every worker ID in {} is in use ({} IDs{}{})", notuse_,
                  std::uint64_t{max_worker_id_} + 1,
                  held > 0 ? fmt::format(", {} free but still held by a live session", held) : "",
                  unusable_.empty()
                      ? ""
                      : fmt::format(", {} unusable: unreadable floor", unusable_.size()))};
}

Result<PoolClaim, CoordError> RecyclePool::take_over(ZkSession& zk, std::uint32_t worker_id,
                                                     const OwnerToken& previous, InuseData data,
                                                     std::int64_t max_floor_ms) {
  const std::string path = inuse_path(worker_id);
  for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(count, move_count(zk));
    BOOST_OUTCOME_TRY(node, zk.try_get(path));
    if (!node) return lost(path, "does not exist any more");
    const auto old = decode_inuse(node.value().data);
    // Ours already: an earlier takeover whose answer was lost.
    if (old && old->owner == data.owner) return read_claim(zk, worker_id, data.owner);
    if (!old || old->owner != previous) return lost(path, "belongs to another owner");
    BOOST_OUTCOME_TRY(holder, alive_.holder(zk, worker_id));
    if (holder) {
      if (holder->owner == previous) {
        return CoordError{CoordErrc::held,
                          fmt::format("worker ID {} is still held by the session of our previous "
                                      "run, {}, which ZooKeeper has not ended yet",
                                      worker_id, holder->describe())};
      }
      return lost(alive_.path(worker_id), fmt::format("is held by {}", holder->describe()));
    }
    // Our previous run may have issued up to its high-water mark; the state
    // file (in data.floor) knows a tighter bound for what came later.
    data.floor = std::max({data.floor, old->floor, old->hwm});
    if (data.floor > max_floor_ms) {
      return CoordError{CoordErrc::floors_ahead,
                        fmt::format("worker ID {}'s floor is {} ms beyond what we may wait out",
                                    worker_id, data.floor - max_floor_ms)};
    }
    auto moved = zk.multi({ZkOp::set(inuse_, "", count),
                           ZkOp::set(path, encode(data), node.value().stat.version),
                           alive_.create(worker_id, data.owner)});
    if (moved) {
      const NodeStat& s = moved.value()[1];
      return PoolClaim{worker_id,  path,    data, s.version,       s.czxid,
                       s.mtime_ms, s.mzxid, true, zk.session_id(), moved.value()[0].version};
    }
    if (moved.error().outcome_unknown()) {
      auto outcome = read_claim(zk, worker_id, data.owner);
      if (outcome || outcome.error().code != CoordErrc::lost) return outcome;
      continue;  // not applied (the node still carries `previous`): try again
    }
    if (!is_race(moved.error())) return CoordError::from(moved.error());
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing during takeover", path)};
}

Result<std::uint32_t, CoordError> RecyclePool::heartbeat(ZkSession& zk, PoolClaim& claim,
                                                         std::int64_t ts, std::int64_t hwm) {
  std::uint32_t refused = 0;
  InuseData next = claim.data;
  next.ts = ts;
  next.hwm = hwm;
  for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
    // The write goes through only if no move happened since the node was
    // known ours: no reclaim-and-claim can slip in between. At rest that is
    // since our last write (one request), while the watch our last reading
    // of the count left has not fired; else since a reading now (which
    // leaves the watch again): a move elsewhere refuses no heartbeat that
    // learnt of it first (node_change_watch.hpp).
    std::int32_t count = 0;
    if (claim.move_count && attempt == 0 &&
        count_watch_.since_read(zk) == NodeChangeWatch::Since::unchanged) {
      count = *claim.move_count;
    } else {
      auto now = watched_move_count(zk);
      if (!now) {
        // The pool's directory gone: our node went with it (only a wipe or
        // a restore deletes it), as lost as a node deleted on its own; not
        // a failure to retry until our lease is out.
        if (auto dir = zk.exists(inuse_); dir && !dir.value()) {
          return lost(claim.path, "does not exist any more (nor does its pool)");
        }
        return now.error();
      }
      count = now.value();
      BOOST_OUTCOME_TRY(node, read_owned(zk, claim.path, claim.data.owner));
      // Same path but another create: reclaimed and claimed again since.
      if (node.second.czxid != claim.czxid) {
        return lost(claim.path, "was reclaimed and given to another owner");
      }
      // Still our token, at a later version: an earlier write of ours whose
      // answer a lost connection swallowed. Nobody else writes our token.
      claim.version = node.second.version;
    }
    claim.move_count.reset();  // until this write is answered
    auto written =
        zk.multi({ZkOp::check(inuse_, count), ZkOp::set(claim.path, encode(next), claim.version),
                  alive_.keep(zk, claim.worker_id, claim.data.owner, claim.alive_session)});
    if (written) {
      claim.data = next;
      claim.version = written.value()[1].version;
      claim.mtime_ms = written.value()[1].mtime_ms;
      claim.zxid = written.value()[1].mzxid;
      claim.alive_session = zk.session_id();
      claim.move_count = count;
      return refused;
    }
    const ZkError& e = written.error();
    BOOST_OUTCOME_TRY(
        about_alive, alive_.recover(zk, claim.worker_id, e, claim.data.owner, claim.alive_session));
    if (about_alive) continue;
    if (e.path == inuse_ && e.code == ZkErrc::bad_version) {
      ++refused;
      continue;  // a move elsewhere: read again
    }
    if (e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node) continue;  // read what happened
    return CoordError::from(e);  // connection loss and the like: the next try reads the outcome
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the pool kept moving during our heartbeat of {}", claim.path)};
}

}  // namespace snowflake::coord
