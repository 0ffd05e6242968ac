#include "snowflake/process/stop_signals.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <ctime>
#include "snowflake/base/thread_name.hpp"

namespace snowflake {

namespace {

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

const char* name_of(int signal) { return signal == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace

void block_stop_signals() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void release_stop_signals() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

StopSignals::StopSignals() { block_stop_signals(); }

StopSignals::~StopSignals() { stop(); }

void StopSignals::stop() {
  done_.store(true);
  if (waiter_.joinable()) waiter_.join();
}

void StopSignals::start(std::function<void(int)> on_first, std::function<void(int)> on_later) {
  waiter_ = std::thread([this, on_first = std::move(on_first), on_later = std::move(on_later)] {
    name_this_thread("signals");
    const sigset_t set = stop_set();
    // A short timeout, so that the destructor can end the thread.
    const timespec slice{0, 100'000'000};
    bool first = true;
    while (!done_.load()) {
      const int signal = sigtimedwait(&set, nullptr, &slice);
      if (signal < 0) continue;  // timed out or interrupted
      if (first) {
        first = false;
        spdlog::info("received {}", name_of(signal));
        on_first(signal);
      } else if (on_later) {
        spdlog::info("received {} again while stopping", name_of(signal));
        on_later(signal);
      } else {
        spdlog::info("received {} again while stopping: ignored", name_of(signal));
      }
    }
  });
}

}  // namespace snowflake
