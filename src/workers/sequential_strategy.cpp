#include "sequential_strategy.hpp"

namespace snowflake::coord {

SequentialStrategy::SequentialStrategy(const std::string& root, const std::string& name,
                                       std::uint32_t max_worker_id, std::chrono::milliseconds lease,
                                       OwnerToken token,
                                       const std::optional<state::StateRecord>& predecessor)
    : worker_(root, name, max_worker_id),
      max_worker_id_(max_worker_id),
      lease_(lease),
      token_(std::move(token)) {
  if (predecessor && predecessor->owner) {
    predecessor_ = Predecessor{*predecessor->owner, predecessor->node, predecessor->reserved_until};
  }
}

Result<Ownership, CoordError> SequentialStrategy::acquire(ZkSession& zk,
                                                          const AcquireRequest& request) {
  auto claimed = worker_.acquire(zk, token_, request.now_ms, lease_.count(), request.max_floor_ms,
                                 predecessor_);
  if (!claimed) {
    if (claimed.error().code == CoordErrc::zookeeper) unanswered_.failed(request.now);
    return claimed.error();
  }
  SequentialClaim& c = claimed.value();
  Ownership o{c.worker_id,
              c.path,
              token_,
              c.data.floor,
              c.data.ts,
              unanswered_.settle(c.answered, request.now),
              c.answered ? std::optional(c.mtime_ms) : std::nullopt,
              c.answered ? std::optional(c.zxid) : std::nullopt};
  claim_ = std::move(c);
  return o;
}

Result<WriteStamp, CoordError> SequentialStrategy::renew(ZkSession& zk, std::int64_t ts,
                                                         std::int64_t hwm) {
  BOOST_OUTCOME_TRYV(worker_.heartbeat(zk, *claim_, ts, hwm));
  return WriteStamp{claim_->mtime_ms, claim_->zxid};
}

Result<void, CoordError> SequentialStrategy::give_back(ZkSession& zk, std::int64_t floor) {
  if (!claim_) return outcome::success();
  BOOST_OUTCOME_TRYV(worker_.release(zk, *claim_, std::max(floor, claim_->data.floor)));
  claim_.reset();
  return outcome::success();
}

Result<ReapResult, CoordError> SequentialStrategy::reap(ZkSession& zk,
                                                        std::optional<std::int64_t>) {
  BOOST_OUTCOME_TRY(used, worker_.numbers_used(zk));
  ReapResult r;
  r.pool_size = max_worker_id_ + 1;
  r.in_use = std::min(used, *r.pool_size);
  return r;
}

void SequentialStrategy::forget(ZkSession* zk) {
  if (claim_ && zk && !zk->gone()) worker_.alive().let_go(*zk, claim_->worker_id);
  claim_.reset();
}

}  // namespace snowflake::coord
