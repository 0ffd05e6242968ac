// What a test starts dies with it: a ZooKeeper server and a daemon started
// by a test process that is killed (kill -9, an abort, a CTest timeout) are
// killed too, and never outlive it to hold ports and worker IDs. A child
// started by a thread that ends before the test does lives on.

#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kStaticConfig = R"({"coordinator":{"type":"static"}})";

// Reaps `pid` if it has ended; the test is its subreaper once its parent died.
bool reaped(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

}  // namespace

TEST_CASE("support: a killed test takes its ZooKeeper server and daemon with it", "[support]") {
  // What the killed test started is orphaned: it comes to us, to be reaped.
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t test = ::fork();
  REQUIRE(test >= 0);
  if (test == 0) {
    // The test that gets killed: it starts both, says their pids, and dies
    // by SIGKILL with no destructor run.
    ::close(fds[0]);
    try {
      ZooKeeperServer zk;
      Daemon daemon(kStaticConfig);
      const pid_t pids[2] = {zk.pid(), daemon.process().pid()};
      (void)!::write(fds[1], pids, sizeof pids);
      ::kill(::getpid(), SIGKILL);
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(fds[1]);
  pid_t pids[2] = {-1, -1};
  pollfd ready{fds[0], POLLIN, 0};
  const bool said =
      ::poll(&ready, 1, 60000) == 1 && ::read(fds[0], pids, sizeof pids) == sizeof pids;
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(test, &status, 0) == test);
  REQUIRE(said);
  CHECK(WIFSIGNALED(status));
  INFO("ZooKeeper pid " << pids[0] << ", daemon pid " << pids[1]);
  bool zookeeper_ended = false;
  bool daemon_ended = false;
  CHECK(eventually(
      [&] {
        zookeeper_ended = zookeeper_ended || reaped(pids[0]);
        daemon_ended = daemon_ended || reaped(pids[1]);
        return zookeeper_ended && daemon_ended;
      },
      10s));
  // Whatever still runs is not left behind by this test either.
  if (!zookeeper_ended) ::kill(pids[0], SIGKILL);
  if (!daemon_ended) ::kill(pids[1], SIGKILL);
}

TEST_CASE("support: a daemon started by a thread that has ended lives on", "[support]") {
  std::unique_ptr<Daemon> daemon;
  std::thread starter([&] { daemon = std::make_unique<Daemon>(kStaticConfig); });
  starter.join();
  REQUIRE(daemon);
  const auto health = http_get(daemon->port(), "/health");
  CHECK((health && health->status == 200));
  CHECK(daemon->process().running());
}
