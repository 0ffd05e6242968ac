#include <catch2/catch.hpp>

#include <time.h>

#include "snowflake/base/clock.hpp"

using namespace snowflake;

namespace {

std::int64_t boottime_ns() {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

TEST_CASE("the lease's monotonic clock is CLOCK_BOOTTIME, which counts through a suspend",
          "[clock][safety]") {
  // Between two readings of BOOTTIME. (Where the machine was never
  // suspended, MONOTONIC reads the same; where it was, they differ by the
  // time it slept, and only BOOTTIME passes.)
  const std::int64_t before = boottime_ns();
  const std::int64_t read = SystemClock::instance().monotonic().time_since_epoch().count();
  const std::int64_t after = boottime_ns();
  CHECK(before <= read);
  CHECK(read <= after);
}
