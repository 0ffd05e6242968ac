#include "recycle_strategy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace snowflake::coord {

RecycleStrategy::RecycleStrategy(RecycleSettings settings, OwnerToken token,
                                 std::optional<state::StateRecord> predecessor)
    : settings_(std::move(settings)),
      token_(std::move(token)),
      predecessor_(std::move(predecessor)),
      pool_(settings_.root, settings_.max_worker_id),
      role_(pool_.reapers_dir()),
      line_(pool_.claimers_dir()) {
  pool_.set_lease_margins(settings_.safety_margin, settings_.max_skew);
  pool_.watch_alive(true);
  pool_.set_reclaim_batch(512);
}

Ownership RecycleStrategy::own(PoolClaim claim, const AcquireRequest& request) {
  Ownership o{claim.worker_id,
              claim.path,
              claim.data.owner,
              claim.data.floor,
              claim.data.ts,
              unanswered_.settle(claim.answered, request.now),
              claim.answered ? std::optional(claim.mtime_ms) : std::nullopt,
              claim.answered ? std::optional(claim.zxid) : std::nullopt};
  claim_ = std::move(claim);
  return o;
}

std::optional<Result<Ownership, CoordError>> RecycleStrategy::try_takeover(
    ZkSession& zk, const AcquireRequest& request) {
  if (!predecessor_) return std::nullopt;
  const state::StateRecord& p = *predecessor_;
  InuseData mine{token_, p.reserved_until, request.now_ms, 0, settings_.lease.count()};
  auto taken = pool_.take_over(zk, p.worker_id, *p.owner, mine, request.max_floor_ms);
  if (taken) {
    spdlog::info(
        "took worker ID {} back from our previous run ({}), which this machine proves "
        "dead",
        p.worker_id, p.owner->describe());
    predecessor_.reset();
    return own(std::move(taken).value(), request);
  }
  const CoordError& e = taken.error();
  switch (e.code) {
    case CoordErrc::zookeeper:
      unanswered_.failed(request.now);
      return e;
    case CoordErrc::held:
      if (!held_since_) held_since_ = request.now;
      if (request.now - *held_since_ < settings_.takeover_patience) return e;
      spdlog::warn("{}; claiming another worker ID instead", e.message);
      break;
    default:
      spdlog::info("not taking worker ID {} back: {}; claiming another", p.worker_id, e.message);
      break;
  }
  predecessor_.reset();
  return std::nullopt;
}

Result<Ownership, CoordError> RecycleStrategy::acquire(ZkSession& zk,
                                                       const AcquireRequest& request) {
  if (!pool_ready_) {
    BOOST_OUTCOME_TRYV(pool_.ensure(zk, settings_.pool_patience));
    pool_ready_ = true;
  }
  if (auto taken = try_takeover(zk, request)) return std::move(*taken);
  if (auto waiting = wait_for_turn(zk, request)) return std::move(*waiting);
  const InuseData data{token_, 0, request.now_ms, 0, settings_.lease.count()};
  // Out of the line in the claim's own transaction: the next claimer is
  // woken as soon as ours commits.
  const auto leave = line_.leave_op(zk);
  auto claimed = pool_.claim(zk, data, request.max_floor_ms, leave);
  if (!claimed) {
    const CoordError& e = claimed.error();
    if (leave && e.zk && e.zk->path == leave->path) {
      line_.left();  // our candidate is gone (removed by hand?): stand again
      line_deadline_.reset();
    } else if (e.code == CoordErrc::zookeeper) {
      unanswered_.failed(request.now);  // the turn is kept for the retry
    } else {
      leave_line(zk);  // exhausted, floors ahead: the next may find what we did not
    }
    return e;
  }
  if (leave && claimed.value().answered) {
    line_.left();
    line_deadline_.reset();
  } else {
    leave_line(zk);
  }
  return own(std::move(claimed).value(), request);
}

std::optional<CoordError> RecycleStrategy::wait_for_turn(ZkSession& zk,
                                                         const AcquireRequest& request) {
  auto turn = line_.held(zk);
  if (!turn) return turn.error();
  if (turn.value()) return std::nullopt;
  // Fixed as we join, by how many were ahead then; never moved later: with
  // a holder stuck in its turn, each claimer behind it gives up at its own
  // time, not all at once, and not each a full patience after the last.
  if (!line_deadline_) {
    line_deadline_ = request.now + settings_.line_patience +
                     static_cast<std::int64_t>(line_.ahead()) * settings_.line_patience_per_claimer;
  }
  if (request.now < *line_deadline_) {
    return CoordError{CoordErrc::in_line,
                      fmt::format("other daemons claim first ({}, {} ahead when last looked)",
                                  line_.dir(), line_.ahead())};
  }
  spdlog::warn(
      "waited out our patience with the claimers ahead in {} ({} ahead when last "
      "looked); claiming beside them",
      line_.dir(), line_.ahead());
  return std::nullopt;
}

void RecycleStrategy::leave_line(ZkSession& zk) {
  line_deadline_.reset();
  if (auto left = line_.leave(zk); !left) {
    spdlog::warn("cannot leave the claimers' line yet ({}); trying again at the next heartbeat",
                 left.error().message);
  }
}

Result<WriteStamp, CoordError> RecycleStrategy::renew(ZkSession& zk, std::int64_t ts,
                                                      std::int64_t hwm) {
  if (line_.in_line(zk)) leave_line(zk);
  auto beat = pool_.heartbeat(zk, *claim_, ts, hwm);
  if (!beat) {
    // Gone, another owner's, taken again, or its alive node another
    // session's: in the pool only a reclaim (after reclaim_after, past our
    // lease) or a proven takeover (of a dead run's) does any of that.
    if (beat.error().code == CoordErrc::lost) {
      return CoordError{CoordErrc::vanished, beat.error().message, beat.error().zk};
    }
    return beat.error();
  }
  return WriteStamp{claim_->mtime_ms, claim_->zxid, beat.value()};
}

Result<void, CoordError> RecycleStrategy::give_back(ZkSession& zk, std::int64_t floor) {
  if (!claim_) return outcome::success();
  BOOST_OUTCOME_TRY(how, pool_.release(zk, *claim_, std::max(floor, claim_->data.floor)));
  if (how == Release::marked) {
    spdlog::info(
        "worker ID {} marked released (other moves came first): the reaper returns it at its "
        "next pass",
        claim_->worker_id);
  }
  claim_.reset();
  return outcome::success();
}

void RecycleStrategy::forget(ZkSession* zk) {
  if (claim_ && zk && !zk->gone()) pool_.alive().let_go(*zk, claim_->worker_id);
  claim_.reset();
}

Result<ReapResult, CoordError> RecycleStrategy::reap(ZkSession& zk,
                                                     std::optional<std::int64_t> zk_now_ms) {
  if (!pool_ready_) return ReapResult{};
  ReapResult seen;
  if (const auto in_use = pool_.in_use_seen()) {
    seen.pool_size = pool_.size();
    seen.in_use = *in_use;
  }
  BOOST_OUTCOME_TRY(holder, role_.held(zk));
  if (!holder) return seen;
  // ZooKeeper's time: the heartbeat's own, else one write of the clock node,
  // sent only if some node may be stale.
  const auto zk_now = [&]() -> Result<std::int64_t, CoordError> {
    if (zk_now_ms) return *zk_now_ms;
    auto now = zk.time_of_write(pool_.clock_path());
    if (!now) return CoordError::from(now.error());
    return now.value();
  };
  return pool_.reclaim_stale(zk, zk_now, settings_.reclaim_after,
                             claim_ ? std::optional(claim_->worker_id) : std::nullopt);
}

}  // namespace snowflake::coord
