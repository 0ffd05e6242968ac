#include "snowflake/base/lease.hpp"
#include "snowflake/base/clock.hpp"

#include <algorithm>

namespace snowflake {

std::string_view to_string(LeaseState state) noexcept {
  switch (state) {
    case LeaseState::not_ready:
      return "not_ready";
    case LeaseState::valid:
      return "valid";
    case LeaseState::expired:
      return "lease_expired";
    case LeaseState::clock_skew:
      return "clock_skew";
    case LeaseState::fenced:
      return "cluster_fenced";
  }
  return "unknown";
}

void Lease::grant_indefinitely() noexcept { deadline_ns_.store(kNever); }

void Lease::extend_until(BootClock::time_point deadline) noexcept {
  // A lease that had run out (or was never granted) starts a new run: the
  // generation moves before the deadline does, so a reader that sees the new
  // deadline sees the new generation too.
  const std::int64_t before = deadline_ns_.load();
  if (before == kNone || before <= now_ns()) generation_.fetch_add(1);
  deadline_ns_.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count());
}

void Lease::revoke() noexcept {
  generation_.fetch_add(1);
  deadline_ns_.store(kNone);
}

std::int64_t Lease::now_ns() const noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.monotonic().time_since_epoch())
      .count();
}

LeaseState Lease::state() const noexcept {
  const std::int64_t deadline = deadline_ns_.load(std::memory_order_acquire);
  if (history_hold_.load(std::memory_order_acquire)) [[unlikely]]
    return LeaseState::fenced;
  if (deadline == kNone) return LeaseState::not_ready;
  if (skew_hold_.load(std::memory_order_acquire)) [[unlikely]]
    return LeaseState::clock_skew;
  if (deadline == kNever) return LeaseState::valid;
  return now_ns() < deadline ? LeaseState::valid : LeaseState::expired;
}

Lease::Status Lease::status() const noexcept {
  const std::int64_t deadline = deadline_ns_.load(std::memory_order_acquire);
  const LeaseState s = state();
  if (deadline == kNone || deadline == kNever) return {s, std::chrono::milliseconds(-1)};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::nanoseconds(deadline - now_ns()));
  return {s, std::max(left, std::chrono::milliseconds(0))};
}

}  // namespace snowflake
