#include "snowflake/sequences/sizing.hpp"

#include <algorithm>
#include <cmath>

namespace snowflake {

std::int64_t next_range_size(double numbers_per_second, std::int64_t last_size,
                             std::int64_t tag_step, const SequenceSizing& sizing) {
  const double by_rate = numbers_per_second * static_cast<double>(sizing.segment_duration.count());
  const double cap = static_cast<double>(std::max<std::int64_t>(1, sizing.max_step));
  const double floor = std::max(
      {1.0, static_cast<double>(tag_step), std::floor(static_cast<double>(last_size) / 2.0)});
  const double size = std::min(cap, std::max(floor, std::ceil(by_rate)));
  return static_cast<std::int64_t>(size);
}

bool should_refill(std::int64_t current_size, std::int64_t current_left, std::int64_t queued,
                   const SequenceSizing& sizing) {
  if (queued > 0) return false;
  if (current_left <= 0) return true;
  const auto used = static_cast<double>(current_size - current_left);
  return used >= sizing.refill_at * static_cast<double>(current_size);
}

void RateMeter::sample(std::int64_t total, Clock::time_point now) {
  if (!started_) {
    started_ = true;
    total_ = total;
    at_ = now;
    return;
  }
  const double dt = std::chrono::duration<double>(now - at_).count();
  if (dt <= 0) return;
  const double instant = static_cast<double>(std::max<std::int64_t>(0, total - total_)) / dt;
  const double weight = 1.0 - std::exp(-dt / static_cast<double>(tau_.count()));
  rate_ += weight * (instant - rate_);
  total_ = total;
  at_ = now;
}

double seconds_left(std::int64_t left, double numbers_per_second) {
  if (numbers_per_second <= 0) return -1;
  return static_cast<double>(left) / numbers_per_second;
}

}  // namespace snowflake
