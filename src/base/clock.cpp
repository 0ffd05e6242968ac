#include "snowflake/base/clock.hpp"

#include <sys/prctl.h>

#include <thread>

namespace snowflake {

void SystemClock::sleep_for(std::chrono::nanoseconds duration) {
  // Callers sleep to a deadline they care about (the next time unit). The
  // kernel's default 50 us timer slack lets wake-ups drift late, so ask for
  // 1 us on every thread that sleeps here; once per thread.
  thread_local const bool tight_slack = prctl(PR_SET_TIMERSLACK, 1000UL) == 0;
  (void)tight_slack;
  std::this_thread::sleep_for(duration);
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace snowflake
