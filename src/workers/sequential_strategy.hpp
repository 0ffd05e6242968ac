#pragma once
// The sequential strategy over our named node (sequential_worker.hpp).

#include <optional>

#include "snowflake/state/state_file.hpp"
#include "snowflake/workers/sequential_worker.hpp"
#include "worker_strategy.hpp"

namespace snowflake::coord {

class SequentialStrategy final : public WorkerStrategy {
 public:
  // `predecessor`: our previous run's record, if the state directory proves
  // that run dead (its reservation is then a tight floor).
  SequentialStrategy(const std::string& root, const std::string& name, std::uint32_t max_worker_id,
                     std::chrono::milliseconds lease, OwnerToken token,
                     const std::optional<state::StateRecord>& predecessor);

  Result<Ownership, CoordError> acquire(ZkSession& zk, const AcquireRequest& request) override;
  Result<WriteStamp, CoordError> renew(ZkSession& zk, std::int64_t ts, std::int64_t hwm) override;
  Result<void, CoordError> give_back(ZkSession& zk, std::int64_t floor) override;
  void forget(ZkSession* zk) override;
  // Nothing to reap (identities are never recycled): how close the cluster
  // is to running out of worker IDs.
  Result<ReapResult, CoordError> reap(ZkSession& zk,
                                      std::optional<std::int64_t> zk_now_ms) override;

 private:
  SequentialWorker worker_;
  std::uint32_t max_worker_id_;
  std::chrono::milliseconds lease_;
  OwnerToken token_;
  std::optional<Predecessor> predecessor_;
  std::optional<SequentialClaim> claim_;
  UnansweredClaims unanswered_;
};

}  // namespace snowflake::coord
