// The real snowflaked talking to "systemd": a notify socket of the test's
// own (NOTIFY_SOCKET, WATCHDOG_USEC as systemd sets them), and stderr passed
// off as the journal stream (JOURNAL_STREAM).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <regex>
#include <sstream>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/notify_socket.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

bool has(const std::string& message, const std::string& line) {
  std::istringstream lines(message);
  for (std::string l; std::getline(lines, l);) {
    if (l == line || (line.back() == '=' && l.starts_with(line))) return true;
  }
  return false;
}

std::string status_of(const std::string& message) {
  const auto at = message.find("STATUS=");
  if (at == std::string::npos) return "";
  return message.substr(at + 7, message.find('\n', at) - at - 7);
}

unsigned ready_status(const Daemon& d) {
  const auto r = http_get(d.port(), "/ready");
  return r ? r->status : 0;
}

// Receives until a message with `line` arrives (returned), recording every
// message in `log`; nullopt at the deadline.
std::optional<std::string> receive_until(NotifySocket& socket, const std::string& line,
                                         std::vector<std::string>& log,
                                         std::chrono::milliseconds within = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto message = socket.receive(std::max(left, 1ms));
    if (!message) break;
    log.push_back(*message);
    if (has(*message, line)) return message;
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string>& log) {
  std::string out;
  for (const auto& m : log) out += "[" + m + "] ";
  return out;
}

// A recycle daemon with timings of seconds, its state in `state`.
json notified_config(const ZooKeeperServer& zk, const TempDir& state) {
  return {{"coordinator",
           {{"type", "recycle"},
            {"state_dir", state.path().string()},
            {"heartbeat_interval_ms", 300},
            {"lease_timeout_ms", 1500},
            {"reclaim_after_ms", 2500},
            {"safety_margin_ms", 500}}},
          {"zookeeper",
           {{"hosts", zk.hosts()}, {"session_timeout_ms", 2000}, {"connect_timeout_ms", 500}}}};
}

}  // namespace

TEST_CASE(
    "systemd: STATUS while waiting for ZooKeeper, READY=1 only once /ready is 200, "
    "WATCHDOG=1 while running, STOPPING=1 last",
    "[systemd]") {
  ZooKeeperServer zk;
  TempDir state;
  NotifySocket notify;
  json config = notified_config(zk, state);
  config["http"] = {{"io_threads", 2}};
  create_cluster(config.dump());
  zk.pause();  // the daemon starts while ZooKeeper does not answer
  Daemon d(config.dump(), "127.0.0.1:0",
           {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "2000000"}}, Genesis::as_found);
  std::vector<std::string> log;

  // Up, but without a worker ID: a STATUS saying so, and no READY.
  const auto waiting = receive_until(notify, "STATUS=", log);
  REQUIRE(waiting);
  CHECK(status_of(*waiting) == "no worker ID yet (recycle), lease not_ready, ZooKeeper connecting");
  REQUIRE(d.process().wait_for_stderr("cannot reach ZooKeeper", 20s));
  CHECK(ready_status(d) == 503);
  while (auto more = notify.receive(0ms)) log.push_back(*more);
  for (const auto& m : log) CHECK_FALSE(has(m, "READY=1"));

  zk.resume();
  const auto ready = receive_until(notify, "READY=1", log);
  REQUIRE(ready);
  CHECK(ready_status(d) == 200);
  CHECK(std::regex_match(
      status_of(*ready),
      std::regex(R"(worker ID \d+ \(recycle\), lease valid, ZooKeeper connected)")));

  // Fed while healthy, several times (every quarter of WATCHDOG_USEC).
  for (int i = 0; i < 3; ++i) REQUIRE(receive_until(notify, "WATCHDOG=1", log, 5s));

  d.process().send_signal(SIGTERM);
  const auto stopping = receive_until(notify, "STOPPING=1", log);
  REQUIRE(stopping);
  CHECK(status_of(*stopping).starts_with("stopping"));
  const auto exited = d.process().wait_for_exit(20s);
  REQUIRE(exited);
  CHECK(exited->code == 0);
  CHECK_FALSE(notify.receive(0ms));  // nothing after STOPPING=1

  // The order, over every line received (one message may carry several).
  std::vector<std::string> lines;
  for (const auto& m : log) {
    std::istringstream in(m);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  const auto first = [&](const std::string& prefix) {
    return std::find_if(lines.begin(), lines.end(),
                        [&](const std::string& l) { return l.starts_with(prefix); }) -
           lines.begin();
  };
  INFO(joined(log));
  CHECK(first("STATUS=") < first("READY=1"));
  CHECK(first("READY=1") < first("WATCHDOG=1"));
  CHECK(first("WATCHDOG=1") < first("STOPPING=1"));
  CHECK(has(log.back(), "STOPPING=1"));
}

TEST_CASE(
    "systemd: a daemon that makes a new cluster alone waits out its fence as a start systemd "
    "extends (EXTEND_TIMEOUT_USEC past the fence's end), then READY=1",
    "[systemd]") {
  ZooKeeperServer zk;
  TempDir state;
  NotifySocket notify;
  const json config = notified_config(zk, state);
  // No cluster create: the daemon makes the root and fences it as new.
  Daemon d(config.dump(), "127.0.0.1:0",
           {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "2000000"}}, Genesis::as_found);
  std::vector<std::string> log;
  const auto extended = receive_until(notify, "EXTEND_TIMEOUT_USEC=", log);
  INFO(joined(log));
  REQUIRE(extended);
  const auto at = extended->find("EXTEND_TIMEOUT_USEC=");
  const auto usec = std::stoll(extended->substr(at + 20));
  // The fence's rest (a few seconds with these timings) and a minute.
  CHECK(usec > 60'000'000);
  CHECK(usec < 60'000'000 + 30'000'000);
  CHECK(ready_status(d) == 503);
  REQUIRE(receive_until(notify, "READY=1", log, 60s));
  CHECK(ready_status(d) == 200);
  // None after READY=1.
  while (auto more = notify.receive(0ms)) log.push_back(*more);
  bool ready_seen = false;
  for (const auto& m : log) {
    ready_seen = ready_seen || has(m, "READY=1");
    if (ready_seen) CHECK_FALSE(has(m, "EXTEND_TIMEOUT_USEC="));
  }
}

TEST_CASE("systemd: without WATCHDOG_USEC no watchdog pings, static mode is ready at once",
          "[systemd]") {
  NotifySocket notify;
  Daemon d(json{{"coordinator", {{"type", "static"}, {"static_worker_id", 5}}}}.dump(),
           "127.0.0.1:0", {{"NOTIFY_SOCKET", notify.path()}});
  std::vector<std::string> log;
  const auto ready = receive_until(notify, "READY=1", log);
  REQUIRE(ready);
  CHECK(status_of(*ready) == "worker ID 5 (static), lease valid");
  CHECK(ready_status(d) == 200);
  d.process().send_signal(SIGTERM);
  REQUIRE(receive_until(notify, "STOPPING=1", log));
  REQUIRE(d.process().wait_for_exit(20s));
  for (const auto& m : log) CHECK_FALSE(has(m, "WATCHDOG=1"));
}

TEST_CASE("systemd: into the journal, log lines carry a syslog priority and no timestamp",
          "[systemd][logging]") {
  TempDir dir;
  const auto config = write_daemon_config(dir, R"({"coordinator":{"type":"static"}})");
  const std::string run = std::string(SNOWFLAKED_PATH) + " --config " + config.string() +
                          " --listen 127.0.0.1:0 --log-level debug";
  // JOURNAL_STREAM names the device:inode of stderr, as systemd sets it.
  ChildProcess journal(
      {"/bin/sh", "-c", "JOURNAL_STREAM=$(stat -L -c %d:%i /dev/stderr) exec " + run});
  REQUIRE(journal.wait_for_stderr("listening on", 20s));
  journal.send_signal(SIGTERM);
  REQUIRE(journal.wait_for_exit(20s));
  std::istringstream lines(journal.stderr_text());
  int checked = 0;
  for (std::string line; std::getline(lines, line); ++checked) {
    INFO(line);
    CHECK(std::regex_match(line, std::regex(R"(<[2-7]>[^0-9].*)")));
  }
  CHECK(checked >= 3);
  CHECK(journal.stderr_text().find("<6>snowflaked ") != std::string::npos);

  // A JOURNAL_STREAM that is not our stderr (inherited by a child whose
  // stderr went elsewhere) keeps the timestamps.
  ChildProcess elsewhere({"/bin/sh", "-c", "JOURNAL_STREAM=1:1 exec " + run});
  REQUIRE(elsewhere.wait_for_stderr("listening on", 20s));
  elsewhere.send_signal(SIGTERM);
  REQUIRE(elsewhere.wait_for_exit(20s));
  CHECK(
      std::regex_search(elsewhere.stderr_text(),
                        std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info snowflaked )")));
}

TEST_CASE(
    "systemd: into the journal, what stops the daemon before logging starts is an error "
    "(priority 3), so journalctl -p err shows it",
    "[systemd][logging]") {
  TempDir dir;
  const auto bad_config = dir.write("bad.json", R"({"coordinator": {"typo": 1}})");
  const std::string journal = "JOURNAL_STREAM=$(stat -L -c %d:%i /dev/stderr) exec ";
  const std::string daemon = std::string(SNOWFLAKED_PATH);
  struct Case {
    std::string arguments;
    std::string message;
  };
  for (const auto& c : {Case{"--config " + bad_config.string(), "coordinator.typo: unknown key"},
                        Case{"--listen nowhere", "--listen: must be"},
                        Case{"--log-level loud", "--log-level: must be one of"},
                        Case{"--no-such-flag", "snowflaked: "}}) {
    INFO(c.arguments);
    ChildProcess run({"/bin/sh", "-c", journal + daemon + " " + c.arguments});
    const auto status = run.wait_for_exit(20s);
    REQUIRE(status);
    CHECK(status->code == 2);
    const std::string err = run.stderr_text();
    INFO(err);
    CHECK(err.find("<3>") == 0);
    CHECK(err.find(c.message) != std::string::npos);
    // Every line of it: journald ranks each line on its own.
    std::istringstream lines(err);
    for (std::string line; std::getline(lines, line);) CHECK(line.starts_with("<3>"));
  }
  // Not into the journal: the plain message.
  ChildProcess plain({daemon, "--config", bad_config.string()});
  REQUIRE(plain.wait_for_exit(20s));
  CHECK(plain.stderr_text() == bad_config.string() + ": coordinator.typo: unknown key\n");
}
