#pragma once
// The two clocks the daemon needs, behind one small interface so tests can
// drive time by hand. Wall time stamps IDs; BootClock measures every
// duration: waits, the lease, the restore grace, ages. They are never
// compared with each other.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace snowflake {

// The one clock every duration and deadline of the daemon is measured on
// (DESIGN.md rule 1 and "Clocks"; docs/design.md, "Which clock measures
// what"): CLOCK_BOOTTIME, which keeps counting while the host is suspended.
// CLOCK_MONOTONIC (std::chrono::steady_clock) stops in a suspend: a lease
// measured on it would outlive a suspend of any length while ZooKeeper
// reclaims the worker ID, and an instant of one compared with an instant of
// the other is off by the time the host spent suspended (a restore grace
// skipped). So BootClock has a time-point type of its own: such a comparison
// does not compile, and scripts/lint.sh refuses steady_clock in src/ and
// include/. Asio's timers and std::condition_variable take it as any clock.
struct BootClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point(duration(std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec));
  }
};

class Clock {
 public:
  virtual ~Clock() = default;

  // Wall-clock time as nanoseconds since the Unix epoch.
  virtual std::int64_t wall_ns() const noexcept = 0;
  // BootClock's time (a manual clock's own in tests).
  virtual BootClock::time_point monotonic() const noexcept = 0;
  // Blocks the calling thread (a manual clock advances itself instead).
  virtual void sleep_for(std::chrono::nanoseconds duration) = 0;

  std::int64_t wall_ms() const noexcept { return wall_ns() / 1'000'000; }
};

// The real clocks: CLOCK_REALTIME, and BootClock (CLOCK_BOOTTIME).
class SystemClock final : public Clock {
 public:
  // Inline and non-virtual, for the generator's hot path: one vDSO call.
  static std::int64_t read_wall_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

  std::int64_t wall_ns() const noexcept override { return read_wall_ns(); }
  BootClock::time_point monotonic() const noexcept override { return BootClock::now(); }
  void sleep_for(std::chrono::nanoseconds duration) override;

  // One shared instance; it has no state.
  static SystemClock& instance();
};

}  // namespace snowflake
