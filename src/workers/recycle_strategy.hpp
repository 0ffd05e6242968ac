#pragma once
// The recycle strategy's decisions over the pool (recycle_pool.hpp): take
// our own worker ID back after a crash we can prove (state_dir.hpp), else
// claim a free one; waiting out the session of our dead predecessor, but
// never a stranger's.

#include <chrono>
#include <optional>

#include "snowflake/base/clock.hpp"
#include "snowflake/state/state_file.hpp"
#include "snowflake/workers/candidate_line.hpp"
#include "snowflake/workers/recycle_pool.hpp"
#include "worker_strategy.hpp"

namespace snowflake::coord {

struct RecycleSettings {
  std::string root;
  std::uint32_t max_worker_id = 0;
  std::chrono::milliseconds lease{};
  std::chrono::milliseconds reclaim_after{};
  std::chrono::milliseconds pool_patience{};  // waiting for another daemon filling the pool
  // How long the session of our dead predecessor may still hold our old
  // worker ID before we claim another instead.
  std::chrono::milliseconds takeover_patience{};
  // How long a claimer waits for the claimers ahead of it in the line
  // before it claims beside them (a claim is safe whoever sends it; the
  // line only saves the retries of a race): a holder frozen in its turn
  // keeps it until its session ends. Longer by line_patience_per_claimer
  // for each claimer ahead of us when we joined: a line of thousands (a
  // rollout) drains a claim at a time, and claimers that lose patience
  // with a line that moves all claim beside it at once.
  std::chrono::milliseconds line_patience{};
  std::chrono::milliseconds line_patience_per_claimer{250};
  // The reaper leaves a node until its own lease and these have passed
  // (RecyclePool::set_lease_margins).
  std::chrono::milliseconds safety_margin{0};
  std::chrono::milliseconds max_skew{0};
};

class RecycleStrategy final : public WorkerStrategy {
 public:
  // `predecessor`: our previous run's record, if the state directory proves
  // that run dead; its worker ID is taken back first.
  RecycleStrategy(RecycleSettings settings, OwnerToken token,
                  std::optional<state::StateRecord> predecessor);

  Result<Ownership, CoordError> acquire(ZkSession& zk, const AcquireRequest& request) override;
  Result<WriteStamp, CoordError> renew(ZkSession& zk, std::int64_t ts, std::int64_t hwm) override;
  Result<void, CoordError> give_back(ZkSession& zk, std::int64_t floor) override;
  void forget(ZkSession* zk) override;
  // Only the daemon holding the reaper role passes (candidate_line.hpp); every
  // daemon reports the pool as its own reads last saw it.
  Result<ReapResult, CoordError> reap(ZkSession& zk,
                                      std::optional<std::int64_t> zk_now_ms) override;
  std::string reapers_dir() const override { return pool_.reapers_dir(); }
  void reaper_watch_fired() noexcept override { role_.look_again(); }
  bool reaper() const noexcept override { return role_.holder_session() != 0; }
  std::string claimers_dir() const override { return pool_.claimers_dir(); }
  void claim_watch_fired() noexcept override { line_.look_again(); }
  std::string alive_dir() const override { return pool_.alive().dir(); }

 private:
  // nullopt: no takeover to try (any more); go on to claim.
  std::optional<Result<Ownership, CoordError>> try_takeover(ZkSession& zk,
                                                            const AcquireRequest& request);
  Ownership own(PoolClaim claim, const AcquireRequest& request);
  // nullopt: our turn in the claimers' line (or our patience with it is
  // out): claim now. Else in_line, or a ZooKeeper error.
  std::optional<CoordError> wait_for_turn(ZkSession& zk, const AcquireRequest& request);
  // Out of the line after a claim; a remove that failed is sent again at
  // the next heartbeat (the line waits for it meanwhile).
  void leave_line(ZkSession& zk);

  RecycleSettings settings_;
  OwnerToken token_;
  std::optional<state::StateRecord> predecessor_;
  std::optional<BootClock::time_point> held_since_;
  RecyclePool pool_;
  CandidateLine role_;  // the reaper's
  CandidateLine line_;  // the claimers'
  // When we claim beside the line if our turn has not come (set as we join).
  std::optional<BootClock::time_point> line_deadline_;
  bool pool_ready_ = false;
  std::optional<PoolClaim> claim_;
  UnansweredClaims unanswered_;
};

}  // namespace snowflake::coord
