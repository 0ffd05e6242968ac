#include "snowflake/runtime/liveness.hpp"

#include <fmt/format.h>

namespace snowflake {

void Liveness::record(std::optional<std::string> unhealthy, std::chrono::milliseconds limit,
                      std::chrono::milliseconds period, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  last_check_ = now;
  limit_ = limit;
  period_ = period;
  unhealthy_ = std::move(unhealthy);
}

std::optional<std::string> Liveness::problem(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_check_);
  // A check runs every period: one missing for longer than the limit means
  // the loop it runs on is stuck.
  if (silent > limit_ + period_) {
    return fmt::format("the main HTTP event loop has not run its health check for {} ms",
                       silent.count());
  }
  return unhealthy_;
}

}  // namespace snowflake
