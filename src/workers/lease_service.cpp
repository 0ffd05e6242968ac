#include "snowflake/workers/lease_service.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "snowflake/base/thread_name.hpp"

namespace snowflake::coord {

namespace {

// What a holder is told: the refusal's kind decides its status code.
LeaseCall::Outcome outcome_of(Result<LeaseTerms, CoordError> result) {
  if (result) {
    LeaseTerms& t = result.value();
    return LeaseGrant{t.worker_id, t.duration, t.first_timestamp_ms, t.max_timestamp_ms,
                      std::move(t.token)};
  }
  const CoordError& e = result.error();
  switch (e.code) {
    case CoordErrc::lost:
      return LeaseRefusal{LeaseRefusal::Why::lost, e.message};
    case CoordErrc::pool_exhausted:
      return LeaseRefusal{LeaseRefusal::Why::pool_exhausted, e.message};
    default:
      return LeaseRefusal{LeaseRefusal::Why::unavailable, e.message};
  }
}

}  // namespace

LeaseService::LeaseService(LeaseServiceOptions options)
    : options_(std::move(options)), leases_(options_.pool), thread_([this] { run(); }) {}

LeaseService::~LeaseService() { stop(); }

std::shared_ptr<LeaseCall> LeaseService::submit(LeaseRequest request) {
  auto call = std::make_shared<LeaseCall>(std::move(request));
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(call);
      wake_.notify_one();
      return call;
    }
  }
  call->finish(LeaseRefusal{LeaseRefusal::Why::unavailable, "the daemon is stopping"});
  return call;
}

void LeaseService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LeaseService::run() {
  name_this_thread("leases");
  for (;;) {
    std::shared_ptr<LeaseCall> call;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and all answered
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    call->finish(outcome_of(serve(call->request())));
  }
}

Result<LeaseTerms, CoordError> LeaseService::serve(const LeaseRequest& request) {
  // Re-judged here, after the wait in the queue: the route judged it when
  // the request came. A give-back vouches for nothing: always taken.
  if (request.kind != LeaseRequest::Kind::give_back && options_.own_lease &&
      !options_.own_lease->may_issue()) {
    return CoordError{CoordErrc::zookeeper, fmt::format("this daemon may not issue IDs now ({})",
                                                        to_string(options_.own_lease->state()))};
  }
  auto session = options_.session ? options_.session() : nullptr;
  if (!session || session->gone()) {
    return CoordError{CoordErrc::zookeeper, "no ZooKeeper session"};
  }
  if (session_.lock() != session) {
    leases_.forget_writes();
    session_ = session;
  }
  ZkSession& zk = *session;
  const std::int64_t now_ms = options_.clock->wall_ms();
  switch (request.kind) {
    case LeaseRequest::Kind::take: {
      auto taken = leases_.take(zk, request.holder, request.duration, now_ms, options_.max_wait);
      if (taken) {
        spdlog::info("leases: worker ID {} leased to {} for {} ms", taken.value().worker_id,
                     request.holder, request.duration.count());
      }
      return taken;
    }
    case LeaseRequest::Kind::renew:
      return leases_.renew(zk, request.worker_id, request.token, request.duration, now_ms,
                           request.last_used_ms);
    case LeaseRequest::Kind::give_back: {
      BOOST_OUTCOME_TRYV(
          leases_.give_back(zk, request.worker_id, request.token, request.last_used_ms));
      spdlog::info("leases: worker ID {} given back", request.worker_id);
      return LeaseTerms{request.worker_id, {}, 0, 0, {}};
    }
  }
  return CoordError{CoordErrc::zookeeper, "unknown lease request"};
}

}  // namespace snowflake::coord
