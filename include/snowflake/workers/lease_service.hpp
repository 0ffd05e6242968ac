#pragma once
// The daemon's side of worker-ID leases for other processes (lease_pool.hpp):
// a thread of its own that takes, renews and gives back over the
// coordinator's ZooKeeper session, so that no event loop waits on
// ZooKeeper. A request is a LeaseCall: the HTTP connection that asked waits
// on its event loop (http/answer.hpp's Wait) and is woken once the outcome
// is in.
//
// Nothing is granted or renewed while this daemon may not issue IDs itself
// (its own lease over, its clock held, the cluster's history in doubt: the
// same refusal /id gives): a daemon cut off from ZooKeeper, or one that a
// wipe or a restore has fenced, must not vouch for anyone's worker ID.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/workers/lease_pool.hpp"

namespace snowflake::coord {

struct LeaseServiceOptions {
  // The pool's root, the cluster's layout, the margin, the reserve.
  LeasePoolSettings pool;
  // The coordinator's session (nullptr while it has none).
  std::function<std::shared_ptr<ZkSession>()> session;
  const Lease* own_lease = nullptr;  // ours: nothing is vouched for while it is not valid
  const Clock* clock = &SystemClock::instance();
  // How far ahead of our clock a free worker ID's floor may be and still be
  // handed out (coordinator.max_boot_wait): the holder waits it out.
  std::chrono::milliseconds max_wait{5'000};
};

class LeaseService {
 public:
  explicit LeaseService(LeaseServiceOptions options);
  ~LeaseService();
  LeaseService(const LeaseService&) = delete;
  LeaseService& operator=(const LeaseService&) = delete;

  // Any thread (a LeaseDesk). The call finishes on the service's thread (or
  // at once, unavailable, once stopped).
  std::shared_ptr<LeaseCall> submit(LeaseRequest request);
  // Finishes what is queued, then the thread ends. Idempotent.
  void stop();

 private:
  void run();
  Result<LeaseTerms, CoordError> serve(const LeaseRequest& request);

  LeaseServiceOptions options_;
  LeasePool leases_;
  // The session leases_'s memory was written in; weak, so that an expired
  // one is not kept open.
  std::weak_ptr<ZkSession> session_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<LeaseCall>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace snowflake::coord
