#pragma once
// A clock that only moves when told to. sleep_for advances both clocks by the
// requested time (and counts the sleep), so code that waits finishes at once
// and deterministically.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "snowflake/base/clock.hpp"

namespace snowflake::test {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t wall_ms) : wall_ns_(wall_ms * 1'000'000) {}

  std::int64_t wall_ns() const noexcept override { return wall_ns_.load(); }
  snowflake::BootClock::time_point monotonic() const noexcept override {
    return snowflake::BootClock::time_point(std::chrono::nanoseconds(mono_ns_.load()));
  }
  void sleep_for(std::chrono::nanoseconds d) override {
    sleeps_.fetch_add(1);
    slept_ns_.fetch_add(d.count());
    advance(d);
  }

  void advance(std::chrono::nanoseconds d) {
    wall_ns_.fetch_add(d.count());
    mono_ns_.fetch_add(d.count());
  }
  // Steps the wall clock only, as NTP or an operator would.
  void set_wall_ms(std::int64_t ms) { wall_ns_.store(ms * 1'000'000); }

  int sleeps() const { return sleeps_.load(); }
  std::chrono::nanoseconds slept() const { return std::chrono::nanoseconds(slept_ns_.load()); }

 private:
  std::atomic<std::int64_t> wall_ns_;
  std::atomic<std::int64_t> mono_ns_{0};
  std::atomic<int> sleeps_{0};
  std::atomic<std::int64_t> slept_ns_{0};
};

}  // namespace snowflake::test
