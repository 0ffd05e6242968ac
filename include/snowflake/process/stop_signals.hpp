#pragma once
// SIGTERM and SIGINT for the daemon: blocked in every thread and taken by
// one thread with sigtimedwait, so they are never delivered the usual way.
// The first asks the daemon to stop; a later one (systemd's stop after a
// failed stop, a supervisor that asks twice, Ctrl-C twice) asks it to stop
// sooner (skip the shutdown delay), and never kills it. With an asio
// signal_set, a second signal that came after the set
// was destroyed, late in shutdown, met the default action and killed the
// daemon with signal 15 after it had drained and given its worker ID back.

#include <atomic>
#include <functional>
#include <thread>

namespace snowflake {

// Blocks SIGTERM and SIGINT in the calling thread: main's first step, so
// that from then on a stop request waits for StopSignals instead of killing
// the process. Before it only the loader and the sanitizers' start-up run,
// and no program can handle a signal there; tests that stop a daemon early
// wait for /proc/<pid>/status to show the two blocked (SigBlk).
void block_stop_signals();
// Gives them their default action back (a pending one acts now): for the
// commands other than the daemon, which end on Ctrl-C the usual way.
void release_stop_signals();

class StopSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread (again: main blocked
  // them first). Construct it before any other thread starts: threads
  // inherit the mask, so none of them can be handed the signal either.
  StopSignals();
  // Joins the waiting thread; the signals stay blocked until exit.
  ~StopSignals();
  // The same, at once: no callback runs after it returns (call it before
  // what the callbacks reach is gone). Idempotent.
  void stop();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Starts waiting: `on_first(signal)` runs, on the waiting thread, for the
  // first signal; `on_later(signal)` for each one after it.
  void start(std::function<void(int)> on_first, std::function<void(int)> on_later = {});

 private:
  std::atomic<bool> done_{false};
  std::thread waiter_;
};

}  // namespace snowflake
