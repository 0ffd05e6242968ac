#include "snowflake/process/systemd_notifier.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "snowflake/base/error_text.hpp"

namespace snowflake {

namespace {

using std::chrono::milliseconds;

// A status is one line of the message: a newline would start a field.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

void notify(const std::string& message) {
  // unset_environment 0: a child we might start would not inherit it anyway.
  if (const int rc = sd_notify(0, message.c_str()); rc < 0) {
    spdlog::warn("sd_notify failed: {}", error_text(-rc));
  }
}

}  // namespace

SystemdNotifier::SystemdNotifier(boost::asio::io_context& loop, Observe observe, Liveness& liveness,
                                 milliseconds limit)
    : timer_(loop), observe_(std::move(observe)), liveness_(liveness), health_limit_(limit) {
  // Read once, in main before any thread starts; nothing calls setenv.
  const char* socket = std::getenv("NOTIFY_SOCKET");  // NOLINT(concurrency-mt-unsafe)
  enabled_ = socket != nullptr && *socket != '\0';
  std::uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_ = std::chrono::microseconds(usec);
    const auto timeout = std::chrono::duration_cast<milliseconds>(watchdog_);
    // Four checks per timeout: a ping is never more than a quarter late.
    period_ = std::clamp(timeout / 4, milliseconds(10), milliseconds(1000));
    health_limit_ = std::max(timeout / 2, 2 * period_);
  }
}

void SystemdNotifier::start() {
  boost::asio::post(timer_.get_executor(), [this] { check(); });
}

void SystemdNotifier::stop(const std::string& status) {
  {
    std::lock_guard lock(send_mutex_);
    if (stopped_.exchange(true)) return;
    if (enabled_) notify("STOPPING=1\nSTATUS=" + one_line(status));
  }
  boost::asio::post(timer_.get_executor(), [this] { timer_.cancel(); });
}

void SystemdNotifier::check() {
  if (stopped_.load()) return;
  const ServiceCondition now = observe_(health_limit_);
  liveness_.record(now.unhealthy, health_limit_, period_, Liveness::Clock::now());
  if (!enabled_) {
    schedule();
    return;
  }
  std::string message;
  if (now.status != last_status_) {
    message += "STATUS=" + one_line(now.status) + "\n";
    last_status_ = now.status;
  }
  if (now.ready && !ready_sent_) {
    message += "READY=1\n";
    ready_sent_ = true;
  } else if (!ready_sent_ && now.not_ready_for) {
    // Past the wait by a minute: the wait's end is ZooKeeper's time, read
    // now and then, and the first heartbeat after it takes a moment too.
    // Sent again at each check: each says how long until the next must come.
    // At most an hour a message (a fence's end read from a root edited by
    // hand must not overflow the microseconds; the next check sends again).
    const auto extend =
        std::min<std::chrono::milliseconds>(*now.not_ready_for, std::chrono::hours(1)) +
        std::chrono::minutes(1);
    message += fmt::format("EXTEND_TIMEOUT_USEC={}\n",
                           std::chrono::duration_cast<std::chrono::microseconds>(extend).count());
  }
  if (watchdog_.count() > 0) {
    if (now.unhealthy && healthy_) {
      spdlog::error(
          "not feeding the systemd watchdog: {}; systemd restarts the daemon unless "
          "this clears within {} ms",
          *now.unhealthy, std::chrono::duration_cast<milliseconds>(watchdog_).count());
    } else if (!now.unhealthy && !healthy_) {
      spdlog::info("healthy again: feeding the systemd watchdog");
    }
    healthy_ = !now.unhealthy;
    // The watchdog guards the running service; it starts with READY=1.
    if (healthy_ && ready_sent_) message += "WATCHDOG=1\n";
  }
  std::lock_guard lock(send_mutex_);
  if (stopped_.load()) return;  // stop() came from another thread meanwhile: STOPPING stays last
  if (!message.empty()) {
    message.pop_back();
    notify(message);
  }
  schedule();
}

void SystemdNotifier::schedule() {
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) check();
  });
}

}  // namespace snowflake
