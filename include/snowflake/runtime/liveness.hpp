#pragma once
// What GET /health answers: is the daemon alive, in the sense that a restart
// would help if it were not? The periodic service check (systemd_notifier.hpp,
// on the server's main event loop) records its verdict here: every HTTP event
// loop ran a probe, and the heartbeat thread is neither stuck in one step nor
// overdue from a wait, within the limit. A check that itself stops coming
// (the main loop is stuck) is a verdict too. These are the conditions on
// which the systemd watchdog stops being fed, so Kubernetes' liveness probe
// restarts what systemd would. A lease lost to a ZooKeeper outage is not
// among them: a restart would not help, and /ready already says so.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "snowflake/base/clock.hpp"

namespace snowflake {

class Liveness {
 public:
  using Clock = BootClock;

  Liveness() : last_check_(Clock::now()) {}

  // The check's verdict at `now` (nullopt: healthy), made with `limit` (how
  // long a part may be stuck) by a check that runs every `period`.
  void record(std::optional<std::string> unhealthy, std::chrono::milliseconds limit,
              std::chrono::milliseconds period, Clock::time_point now);
  // nullopt while alive; otherwise why not.
  std::optional<std::string> problem(Clock::time_point now) const;

 private:
  mutable std::mutex mutex_;
  Clock::time_point last_check_;
  std::chrono::milliseconds limit_{30'000};  // until the first check says otherwise
  std::chrono::milliseconds period_{1'000};
  std::optional<std::string> unhealthy_;
};

}  // namespace snowflake
