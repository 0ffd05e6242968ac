// SystemdNotifier's rules with a made-up daemon condition: READY once,
// STATUS on change, WATCHDOG only while ready and healthy, nothing after
// STOPPING. The messages go over a real notify socket.

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "../support/notify_socket.hpp"
#include "../support/polling.hpp"
#include "snowflake/process/systemd_notifier.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

// Sets variables for this test's process, as systemd would, and unsets them after.
struct ScopedEnv {
  std::vector<std::string> names;
  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    names.push_back(name);
  }
  ~ScopedEnv() {
    for (const auto& n : names) ::unsetenv(n.c_str());
  }
};

struct FakeDaemon {
  std::mutex mutex;
  ServiceCondition condition{false, "starting", std::nullopt};
  std::atomic<int> checks{0};
  std::atomic<long> last_limit_ms{0};

  ServiceCondition observe(std::chrono::milliseconds limit) {
    last_limit_ms = limit.count();
    ++checks;
    std::lock_guard lock(mutex);
    return condition;
  }
  void change(const std::function<void(ServiceCondition&)>& f) {
    std::lock_guard lock(mutex);
    f(condition);
  }
  // Waits for `n` more checks, so that a change has been seen.
  bool checked(int n) {
    const int target = checks.load() + n;
    return eventually([&] { return checks.load() >= target; }, 10s);
  }
};

std::vector<std::string> drain(NotifySocket& socket) {
  std::vector<std::string> out;
  while (auto m = socket.receive(0ms)) out.push_back(*m);
  return out;
}

bool any_has(const std::vector<std::string>& messages, const std::string& text) {
  for (const auto& m : messages) {
    if (m.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("systemd notifier: READY once, STATUS on change, WATCHDOG only while ready and healthy",
          "[systemd]") {
  NotifySocket socket;
  ScopedEnv env;
  env.set("NOTIFY_SOCKET", socket.path());
  env.set("WATCHDOG_USEC", "200000");  // 200 ms: a check every 50 ms

  FakeDaemon daemon;
  boost::asio::io_context loop;
  auto work = boost::asio::make_work_guard(loop);
  Liveness liveness;
  SystemdNotifier notifier(
      loop, [&](std::chrono::milliseconds limit) { return daemon.observe(limit); }, liveness,
      5000ms);
  REQUIRE(notifier.under_systemd());
  CHECK(notifier.watchdog_timeout() == 200ms);
  CHECK(notifier.check_period() == 50ms);
  std::thread runner([&] { loop.run(); });
  notifier.start();

  // Not ready: the status, nothing else (the watchdog starts with READY).
  REQUIRE(daemon.checked(4));
  CHECK(daemon.last_limit_ms == 100);
  auto got = drain(socket);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == "STATUS=starting");

  daemon.change([](ServiceCondition& c) {
    c.ready = true;
    c.status = "worker ID 3 (recycle), lease valid";
  });
  REQUIRE(daemon.checked(4));
  got = drain(socket);
  REQUIRE(got.size() >= 3);
  CHECK(got[0] == "STATUS=worker ID 3 (recycle), lease valid\nREADY=1\nWATCHDOG=1");
  CHECK(got[1] == "WATCHDOG=1");

  CHECK_FALSE(liveness.problem(Liveness::Clock::now()));

  // Stuck somewhere: no pings, and the status does not repeat; /health says why.
  daemon.change([](ServiceCondition& c) { c.unhealthy = "stuck"; });
  REQUIRE(daemon.checked(2));
  drain(socket);  // a ping may have left before the change was seen
  REQUIRE(daemon.checked(4));
  CHECK(drain(socket).empty());
  CHECK(liveness.problem(Liveness::Clock::now()) == "stuck");

  daemon.change([](ServiceCondition& c) { c.unhealthy.reset(); });
  REQUIRE(daemon.checked(2));
  got = drain(socket);
  CHECK(any_has(got, "WATCHDOG=1"));
  CHECK_FALSE(liveness.problem(Liveness::Clock::now()));
  CHECK_FALSE(any_has(got, "READY=1"));  // once only

  notifier.stop("stopping:\ntest");  // a newline would start another field
  // A ping from a check that ran just before stop() may come first.
  auto stopping = socket.receive(1s);
  while (stopping == "WATCHDOG=1") stopping = socket.receive(1s);
  CHECK(stopping == "STOPPING=1\nSTATUS=stopping: test");
  drain(socket);
  const int checks_after_stop = daemon.checks.load();
  notifier.stop("again");  // once only
  work.reset();
  runner.join();  // the loop runs out of work: the checks have ended
  CHECK(daemon.checks.load() <= checks_after_stop + 1);
  CHECK(drain(socket).empty());
}

TEST_CASE("systemd notifier: outside systemd it sends nothing, and still checks for /health",
          "[systemd]") {
  ::unsetenv("NOTIFY_SOCKET");
  FakeDaemon daemon;
  boost::asio::io_context loop;
  Liveness liveness;
  SystemdNotifier notifier(
      loop, [&](std::chrono::milliseconds limit) { return daemon.observe(limit); }, liveness,
      1500ms);
  CHECK_FALSE(notifier.under_systemd());
  CHECK(notifier.check_period() == 1000ms);
  daemon.change([](ServiceCondition& c) { c.unhealthy = "an HTTP event loop has not run"; });
  notifier.start();
  loop.run_one();  // the first check, at once
  CHECK(daemon.checks.load() == 1);
  CHECK(daemon.last_limit_ms == 1500);  // the daemon's own limit: no watchdog sets one
  CHECK(liveness.problem(Liveness::Clock::now()) == "an HTTP event loop has not run");
  notifier.stop("bye");
  loop.run();  // the next check is cancelled: returns at once
  CHECK(daemon.checks.load() == 1);
}

TEST_CASE("liveness: the check's verdict, and a check that stops coming is a verdict too",
          "[systemd][health]") {
  Liveness liveness;
  const auto t0 = Liveness::Clock::now();
  CHECK_FALSE(liveness.problem(t0));  // starting: alive
  liveness.record(std::nullopt, 2000ms, 1000ms, t0);
  CHECK_FALSE(liveness.problem(t0 + 2900ms));
  // No check for longer than the limit plus a period: the main loop is stuck.
  const auto stuck = liveness.problem(t0 + 3100ms);
  REQUIRE(stuck);
  CHECK_THAT(*stuck,
             Catch::Contains("main HTTP event loop has not run its health check for 3100 ms"));
  liveness.record("the heartbeat thread is stuck", 2000ms, 1000ms, t0 + 3200ms);
  CHECK(liveness.problem(t0 + 3300ms) == "the heartbeat thread is stuck");
  liveness.record(std::nullopt, 2000ms, 1000ms, t0 + 4000ms);
  CHECK_FALSE(liveness.problem(t0 + 4100ms));
}

TEST_CASE(
    "systemd notifier: not ready for a known while (a fence), each check extends the start's "
    "timeout past it, and once ready no more",
    "[systemd]") {
  NotifySocket socket;
  ScopedEnv env;
  env.set("NOTIFY_SOCKET", socket.path());
  env.set("WATCHDOG_USEC", "200000");

  FakeDaemon daemon;
  daemon.change([](ServiceCondition& c) {
    c.status = "cluster fenced";
    c.not_ready_for = std::chrono::minutes(14);
  });
  boost::asio::io_context loop;
  auto work = boost::asio::make_work_guard(loop);
  Liveness liveness;
  SystemdNotifier notifier(
      loop, [&](std::chrono::milliseconds limit) { return daemon.observe(limit); }, liveness,
      5000ms);
  std::thread runner([&] { loop.run(); });
  notifier.start();
  REQUIRE(daemon.checked(3));
  auto got = drain(socket);
  REQUIRE(got.size() >= 2);
  // The fence's rest and a minute, in microseconds; again at every check.
  CHECK(got[0] == "STATUS=cluster fenced\nEXTEND_TIMEOUT_USEC=900000000");
  CHECK(got[1] == "EXTEND_TIMEOUT_USEC=900000000");

  // Not ready with no known end (ZooKeeper away): nothing to extend by.
  daemon.change([](ServiceCondition& c) { c.not_ready_for.reset(); });
  REQUIRE(daemon.checked(2));
  drain(socket);
  REQUIRE(daemon.checked(3));
  CHECK(drain(socket).empty());

  // Ready: READY=1, and a fence met later (a loss) extends nothing.
  daemon.change([](ServiceCondition& c) {
    c.ready = true;
    c.status = "ready";
  });
  REQUIRE(daemon.checked(3));
  CHECK(any_has(drain(socket), "READY=1"));
  daemon.change([](ServiceCondition& c) {
    c.ready = false;
    c.not_ready_for = std::chrono::minutes(5);
  });
  REQUIRE(daemon.checked(3));
  CHECK_FALSE(any_has(drain(socket), "EXTEND_TIMEOUT_USEC"));
  notifier.stop("stopping");
  work.reset();
  runner.join();
}
