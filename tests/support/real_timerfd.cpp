// A preload that sends timerfd_settime and timerfd_gettime straight to the
// kernel, ahead of libfaketime in LD_PRELOAD (wall_clock.cpp).
//
// The tests fake the wall clock only (FAKETIME_DONT_FAKE_MONOTONIC), but
// libfaketime also rewrites a timerfd's absolute expiry as if it were wall
// time, whatever the timer's clock. Asio arms its CLOCK_MONOTONIC timerfd
// with the absolute time 0 + 1 ns for a timer that is already due; shifted by
// the fake offset, that is hours ahead (an offset behind real time, on a host
// up for less than it) or before 0 (ahead: refused), and no timer of that
// event loop fires again: a daemon whose drain never ends at a clean stop.
// Relative expiries pass through libfaketime unchanged either way.

#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

extern "C" {

int timerfd_settime(int fd, int flags, const itimerspec* new_value, itimerspec* old_value) {
  return static_cast<int>(::syscall(SYS_timerfd_settime, fd, flags, new_value, old_value));
}

int timerfd_gettime(int fd, itimerspec* current) {
  return static_cast<int>(::syscall(SYS_timerfd_gettime, fd, current));
}

}  // extern "C"
