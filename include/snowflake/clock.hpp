#pragma once
// The two clocks the daemon needs, behind one small interface so tests can
// drive time by hand. Wall time stamps IDs; monotonic time measures waits and
// the lease. They are never compared with each other.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace snowflake {

class Clock {
 public:
  virtual ~Clock() = default;

  // Wall-clock time as nanoseconds since the Unix epoch.
  virtual std::int64_t wall_ns() const noexcept = 0;
  virtual std::chrono::steady_clock::time_point monotonic() const noexcept = 0;
  // Blocks the calling thread (a manual clock advances itself instead).
  virtual void sleep_for(std::chrono::nanoseconds duration) = 0;

  std::int64_t wall_ms() const noexcept { return wall_ns() / 1'000'000; }
};

// The real clocks: CLOCK_REALTIME, and CLOCK_BOOTTIME as the monotonic one.
// BOOTTIME keeps counting while the machine is suspended (CLOCK_MONOTONIC
// stops): a lease measured on MONOTONIC would survive a suspend of any length,
// while ZooKeeper reclaims the worker ID meanwhile.
class SystemClock final : public Clock {
 public:
  // Inline and non-virtual, for the generator's hot path: one vDSO call.
  static std::int64_t read_wall_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

  std::int64_t wall_ns() const noexcept override { return read_wall_ns(); }
  std::chrono::steady_clock::time_point monotonic() const noexcept override;
  void sleep_for(std::chrono::nanoseconds duration) override;

  // One shared instance; it has no state.
  static SystemClock& instance();
};

}  // namespace snowflake
