// RecyclePool's returns of worker IDs to notuse: a clean stop's release
// (the move, or the mark the reaper moves), and the reaper's passes over
// stale and marked nodes, many to a multi.
#include <fmt/format.h>

#include <algorithm>

#include "pool_ops.hpp"
#include "snowflake/workers/recycle_pool.hpp"

namespace snowflake::coord {

Result<ReapResult, CoordError> RecyclePool::reclaim_stale(
    ZkSession& zk, std::int64_t zk_now_ms, std::chrono::milliseconds reclaim_after,
    std::optional<std::uint32_t> our_worker_id) {
  return reclaim_stale(
      zk, [zk_now_ms]() -> Result<std::int64_t, CoordError> { return zk_now_ms; }, reclaim_after,
      our_worker_id);
}

Result<ReapResult, CoordError> RecyclePool::reclaim_stale(
    ZkSession& zk, const std::function<Result<std::int64_t, CoordError>()>& zk_now,
    std::chrono::milliseconds reclaim_after, std::optional<std::uint32_t> our_worker_id,
    const std::function<bool()>& between_batches) {
  // Candidates first, by two listings: an inuse node whose owner's session
  // holds its alive node is not reclaimable, however old its last write
  // (rule 6), so only the others are read. At rest that is none: two reads
  // a pass, whatever the pool's size. The listings only choose; the multi
  // below proves (move count, node version, alive node absent).
  BOOST_OUTCOME_TRY(names, zk.children(inuse_));
  BOOST_OUTCOME_TRY(alive_names, zk.children(alive_.dir(), watch_alive_));
  const std::set<std::string> alive(alive_names.begin(), alive_names.end());
  ReapResult result;
  result.pool_size = max_worker_id_ + 1;
  result.in_use = static_cast<std::uint32_t>(names.size());
  in_use_seen_ = result.in_use;
  std::vector<std::uint32_t> candidates;
  for (const auto& name : names) {
    const auto id = pool_worker_id(name, max_worker_id_);
    if (!id) continue;
    if (alive.contains(name)) {
      // Held again (its owner back on a new session): what a pass read of
      // it while it had no alive node says nothing of a later mark.
      fresh_until_.erase(*id);
    } else if (id != our_worker_id) {
      candidates.push_back(*id);
    }
  }
  if (candidates.empty()) return result;
  BOOST_OUTCOME_TRY(now_ms, zk_now());
  // Up to batch_ a multi, and one move a multi: every running daemon's
  // heartbeat checks the move count, so a move per worker ID would fail
  // each of them once per reclaim (a wave of them after a node's crash,
  // hundreds of heartbeats retried at once), where a batch fails each once. Each batch reads the
  // count, then its nodes, so a move elsewhere costs that batch a reading, not the pass.
  for (std::size_t first = 0; first < candidates.size(); first += batch_) {
    if (first > 0 && between_batches && !between_batches()) {
      result.incomplete = true;
      break;
    }
    const std::size_t n = std::min(batch_, candidates.size() - first);
    BOOST_OUTCOME_TRY(
        reclaim_batch(zk, {candidates.data() + first, n}, now_ms, reclaim_after, result));
  }
  in_use_seen_ = result.in_use;
  return result;
}

Result<std::vector<RecyclePool::StaleNode>, CoordError> RecyclePool::read_stale(
    ZkSession& zk, std::span<const std::uint32_t> ids, const std::set<std::uint32_t>& skipped,
    std::int64_t now_ms, std::chrono::milliseconds reclaim_after, ReapResult& result) {
  std::vector<StaleNode> stale;
  for (const std::uint32_t id : ids) {
    if (skipped.contains(id)) continue;
    if (const auto it = fresh_until_.find(id); it != fresh_until_.end() && now_ms <= it->second) {
      continue;  // written since, if at all: fresher still
    }
    BOOST_OUTCOME_TRY(node, zk.try_get(inuse_path(id)));
    if (!node) continue;
    const NodeStat& s = node.value().stat;
    const auto old = decode_inuse(node.value().data);
    // Its own lease too: one granted under a longer reclaim_after than ours
    // (a rollout of new timings, a holder's lease) runs to its end.
    std::int64_t threshold = reclaim_after.count();
    if (old) {
      const bool holder = old->owner.instance.starts_with(kLeaseInstancePrefix);
      const auto margin = safety_margin_ + (holder ? max_skew_ : std::chrono::milliseconds(0));
      threshold = std::max(threshold, old->lease_ms + margin.count());
    }
    // A clean stop's mark (release()): its owner wrote its last stamp after
    // it stopped issuing, while the node was its own; nothing to wait for.
    const bool released = old && old->released;
    if (!released && now_ms - s.mtime_ms <= threshold) {
      fresh_until_[id] = s.mtime_ms + threshold;
      continue;
    }
    fresh_until_.erase(id);
    if (!old) {  // no floor to hand on: an operator must look
      if (std::find(result.unreadable.begin(), result.unreadable.end(), id) ==
          result.unreadable.end()) {
        result.unreadable.push_back(id);
      }
      continue;
    }
    // Its owner stopped issuing by its lease and its time fence, long ago;
    // the next owner starts above anything it may have issued.
    stale.push_back({id, s.version, old->last_possible_ms()});
  }
  return stale;
}

Result<void, CoordError> RecyclePool::reclaim_batch(ZkSession& zk,
                                                    std::span<const std::uint32_t> ids,
                                                    std::int64_t now_ms,
                                                    std::chrono::milliseconds reclaim_after,
                                                    ReapResult& result) {
  std::set<std::uint32_t> skipped;  // held, or moved since it was read: the next pass's
  for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
    // The count before the nodes: a move after our readings changes it, and
    // the multi then fails instead of acting on them.
    BOOST_OUTCOME_TRY(count, move_count(zk));
    BOOST_OUTCOME_TRY(stale, read_stale(zk, ids, skipped, now_ms, reclaim_after, result));
    while (!stale.empty()) {
      // Each node's ops as alone: its version, and its owner's session
      // ended (no alive node: one live owner per ID).
      std::vector<ZkOp> ops{ZkOp::set(inuse_, "", count)};
      for (const StaleNode& node : stale) {
        const auto [make, remove] = alive_.absent(node.id);
        ops.insert(ops.end(),
                   {ZkOp::remove(inuse_path(node.id), node.version),
                    ZkOp::create(notuse_path(node.id), encode(NotuseData{node.last_possible_ms})),
                    make, remove});
      }
      auto done = zk.multi(ops);
      if (done) {
        result.moved += static_cast<int>(stale.size());
        result.in_use -= static_cast<std::uint32_t>(stale.size());
        return outcome::success();
      }
      const ZkError& e = done.error();
      if (e.outcome_unknown()) {  // the next pass reads afresh
        result.incomplete = true;
        return outcome::success();
      }
      if (e.path == inuse_) break;  // a move elsewhere: read again
      const auto culprit = std::find_if(stale.begin(), stale.end(), [&](const StaleNode& n) {
        return e.path == inuse_path(n.id) || e.path == notuse_path(n.id) ||
               e.path == alive_.path(n.id);
      });
      if (culprit == stale.end()) {
        if (is_race(e)) {  // the next pass reads afresh
          result.incomplete = true;
          return outcome::success();
        }
        return CoordError::from(e);
      }
      if (!is_race(e)) return CoordError::from(e);
      // That ID alone is left (its owner's session lives, or it moved since
      // we read it), the others sent again: the multi failed whole, so the
      // count still stands.
      if (e.path == alive_.path(culprit->id) && e.code == ZkErrc::node_exists) {
        result.held.push_back(culprit->id);
      }
      skipped.insert(culprit->id);
      stale.erase(culprit);
    }
    if (stale.empty()) return outcome::success();
  }
  result.incomplete = true;  // the pool kept moving: the next pass
  return outcome::success();
}

Result<Release, CoordError> RecyclePool::release(ZkSession& zk, const PoolClaim& claim,
                                                 std::int64_t floor) {
  bool ours_alive = claim.alive_session == zk.session_id() && claim.alive_session != 0;
  bool unsure = false;  // the move's answer lost: it may have gone through
  // The move back to notuse, once, on the count remembered from our last
  // answered write: one request when nothing else moved since. It bumps the
  // count, so when a fleet stops at once the first such move refuses all
  // the others' (and every running daemon's next heartbeat once); those
  // are not sent again, each a read and a move behind the last, one at a
  // time through the count (4,500 at once took minutes), but marked below;
  // nor is it sent when the count's watch says a move came first.
  if (claim.move_count && count_watch_.since_read(zk) != NodeChangeWatch::Since::changed) {
    std::vector<ZkOp> ops{ZkOp::set(inuse_, "", *claim.move_count),
                          ZkOp::remove(claim.path, claim.version),
                          ZkOp::create(notuse_path(claim.worker_id), encode(NotuseData{floor}))};
    if (ours_alive) ops.push_back(ZkOp::remove(alive_.path(claim.worker_id), -1));
    auto done = zk.multi(ops);
    if (done) return Release::returned;
    if (!is_race(done.error()) && !done.error().outcome_unknown())
      return CoordError::from(done.error());
    unsure = done.error().outcome_unknown();
  }
  // The mark: our node says we stopped, with our last stamp as its time
  // fence (ts, lease 0), and our alive node goes. Checked, not bumped,
  // against the count, as a heartbeat is: it moves nothing, so marks refuse
  // nobody, and the reaper returns them, many in one multi, at its next
  // pass (woken by the alive node's removal), the floor its last stamp.
  InuseData last = claim.data;
  last.ts = floor;
  last.hwm = floor;
  last.lease_ms = 0;
  last.released = true;
  for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(count, move_count(zk));
    auto owned = read_owned(zk, claim.path, claim.data.owner);
    if (!owned && unsure && owned.error().code == CoordErrc::lost) {
      // Gone: our unanswered move went through (or a reaper moved it, our
      // lease long over, with a floor past all we issued): back either way.
      return Release::returned;
    }
    BOOST_OUTCOME_TRY(node, std::move(owned));
    const NodeStat& s = node.second;
    if (s.czxid != claim.czxid) return lost(claim.path, "was reclaimed and given to another owner");
    std::vector<ZkOp> ops{ZkOp::check(inuse_, count),
                          ZkOp::set(claim.path, encode(last), s.version)};
    if (ours_alive) ops.push_back(ZkOp::remove(alive_.path(claim.worker_id), -1));
    auto done = zk.multi(ops);
    if (done) return Release::marked;
    const ZkError& e = done.error();
    if (ours_alive && e.path == alive_.path(claim.worker_id) && e.code == ZkErrc::no_node) {
      ours_alive = false;  // gone with a session since: nothing to remove
      continue;
    }
    if (!is_race(e) && !e.outcome_unknown()) return CoordError::from(e);
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("{} kept changing during release", claim.path)};
}

}  // namespace snowflake::coord
