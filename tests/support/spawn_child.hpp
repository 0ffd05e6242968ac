#pragma once
// Starts a program that dies with the test process: it gets SIGKILL
// (PR_SET_PDEATHSIG) when the test ends in any way, an abort, a crash or a
// kill -9 included, so no ZooKeeper server or daemon outlives an aborted run.
//
// The kernel sends the parent-death signal when the *thread* that forked the
// child exits, not the process. A child forked by a thread that ends before
// the test does (the chaos runner's supervisor restarts daemons and is joined
// before they are stopped) would die with that thread, so every child is
// forked by one thread that lives as long as the process.

#include <sys/types.h>

#include <string>
#include <vector>

namespace snowflake::test {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is the program's path (no PATH search)
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string stdout_path;        // created or truncated
  std::string stderr_path;
  // > 0: the program runs in a time namespace of its own whose
  // CLOCK_BOOTTIME is this many seconds ahead of CLOCK_MONOTONIC, as on a
  // host that was suspended that long (`unshare -T --boottime N`; root only).
  long suspended_for_s = 0;
};

// The child's pid; throws std::runtime_error naming the program if it cannot
// be started (fork failed, or exec failed: the child's errno is reported).
pid_t spawn_child(const SpawnRequest& request);

}  // namespace snowflake::test
