#pragma once
// Tells systemd how the daemon is doing, over sd_notify(3):
//
//   STATUS=...   whenever the one-line status changes (`systemctl status`);
//   READY=1      once, the first time the daemon may issue IDs (a worker ID
//                is owned, its lease valid, the port listening) — so
//                `systemctl start` returns when /ready would answer 200;
//   EXTEND_TIMEOUT_USEC=...  on every check before READY while the daemon
//                waits for something of known length (the cluster's fence
//                until its end, which a new cluster's runs past the unit's
//                TimeoutStartSec): the start is not timed out and restarted
//                while it waits as it must;
//   WATCHDOG=1   on every check while the daemon is ready and healthy, when
//                the unit sets WatchdogSec= — a stalled check is itself
//                unhealthy, because the checks run on the server's main
//                event loop;
//   STOPPING=1   when shutdown begins.
//
// Every check also records its health verdict for GET /health (liveness.hpp),
// under systemd or not: outside it (no NOTIFY_SOCKET) nothing is sent, and
// the checks run every second with `limit` = the daemon's own bound on one
// heartbeat step (Daemon: zookeeper.session_timeout_ms + connect_timeout_ms).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "snowflake/runtime/liveness.hpp"

namespace snowflake {

struct ServiceCondition {
  bool ready = false;  // what /ready answers
  std::string status;  // one line
  // Set when the watchdog must not be fed: why (an event loop or the
  // heartbeat thread stuck for longer than the limit it was asked about).
  std::optional<std::string> unhealthy;
  // Not ready, and not for this long yet at least (a fence's rest): the
  // start's timeout is extended past it.
  std::optional<std::chrono::milliseconds> not_ready_for{};
};

class SystemdNotifier {
 public:
  // `observe(limit)`: the daemon's condition now; `limit` is how long a
  // part may be stuck before it counts as unhealthy (half the watchdog
  // timeout, so that systemd's timer is never the first to notice).
  using Observe = std::function<ServiceCondition(std::chrono::milliseconds limit)>;

  // `limit`: how long a part may be stuck when no watchdog sets it.
  SystemdNotifier(boost::asio::io_context& loop, Observe observe, Liveness& liveness,
                  std::chrono::milliseconds limit);
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // Starts the checks (the first at once) on the loop.
  void start();
  // Sends STOPPING=1 with `status` and ends the checks. Thread-safe; once only.
  void stop(const std::string& status);

  bool under_systemd() const noexcept { return enabled_; }
  // WATCHDOG_USEC as set by systemd for this process; 0 without a watchdog.
  std::chrono::microseconds watchdog_timeout() const noexcept { return watchdog_; }
  std::chrono::milliseconds check_period() const noexcept { return period_; }

 private:
  void check();
  void schedule();

  boost::asio::steady_timer timer_;
  Observe observe_;
  Liveness& liveness_;
  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  std::chrono::milliseconds period_{1000};
  std::chrono::milliseconds health_limit_;
  // Only the loop's thread touches these.
  bool ready_sent_ = false;
  bool healthy_ = true;
  std::string last_status_;
  std::mutex send_mutex_;  // nothing is sent after STOPPING=1
  std::atomic<bool> stopped_{false};
};

}  // namespace snowflake
