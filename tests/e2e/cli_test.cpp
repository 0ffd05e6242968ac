// The real snowflaked binary, run as a user would.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/polling.hpp"
#include "snowflake/version.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {}

TEST_CASE("--help and --version", "[cli]") {
  const auto help = run_process({snowflaked_binary(), "--help"});
  CHECK(help.status.code == 0);
  CHECK_THAT(help.out, Catch::Contains("snowflaked decode ID"));
  const auto version = run_process({snowflaked_binary(), "--version"});
  CHECK(version.status.code == 0);
  // The version the project declares, and the commit it was built from.
  const auto head =
      run_process({"/usr/bin/git", "-C", SNOWFLAKE_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
  const std::string revision =
      head.status.code == 0 ? head.out.substr(0, head.out.find('\n')) : std::string("unknown");
  std::string declared = snowflake::kVersion;  // CMake's project(VERSION): digits and dots
  for (auto at = declared.find('.'); at != std::string::npos; at = declared.find('.', at + 2))
    declared.insert(at, "\\");
  CHECK_THAT(version.out, Catch::Matches("snowflaked " + declared + " \\(revision " + revision +
                                         "(-dirty)?\\)\n"));
}

TEST_CASE("bad command lines exit 2 with the usage", "[cli]") {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{snowflaked_binary(), "--bogus"},
                                             {snowflaked_binary(), "frobnicate"},
                                             {snowflaked_binary(), "decode"},
                                             {snowflaked_binary(), "decode", "1", "2"},
                                             {snowflaked_binary(), "check-config"}}) {
    const auto r = run_process(args);
    INFO(args.back());
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Catch::Contains("Usage:"));
  }
}

TEST_CASE("decode prints the fields as JSON, with the config's layout", "[cli]") {
  // (1000 << 22) | (1 << 12) | 5: 1000 ms after the default epoch.
  const auto r = run_process({snowflaked_binary(), "decode", "4194308101"});
  REQUIRE(r.status.code == 0);
  const auto json = nlohmann::json::parse(r.out);
  CHECK(json["id"] == "4194308101");
  CHECK(json["time"] == "2025-01-01T00:00:01.000Z");
  CHECK(json["worker_id"] == 1);
  CHECK(json["sequence"] == 5);

  TempDir dir;
  const auto config = dir.write("c.json", R"({"layout": {"time_bits": 39, "worker_bits": 12,
      "sequence_bits": 12, "time_unit_ms": 10, "epoch": "2020-01-01T00:00:00Z"}})");
  const auto custom =
      run_process({snowflaked_binary(), "decode", "4194308101", "--config", config.string()});
  REQUIRE(custom.status.code == 0);
  const auto j2 = nlohmann::json::parse(custom.out);
  // (250 << 24) | (1 << 12) | 5: 250 units of 10 ms after the epoch.
  CHECK(j2["time"] == "2020-01-01T00:00:02.500Z");
  CHECK(j2["worker_id"] == 1);
  CHECK(j2["sequence"] == 5);
}

TEST_CASE(
    "a layout whose time has run out decodes, but neither check-config nor the daemon takes it",
    "[cli][layout]") {
  TempDir dir;
  // uid-generator's default layout: 28 bits of seconds since 2016-05-20 (UTC+8), over in 2024.
  const auto config = dir.write("uid.json", R"({"layout": {"preset": "uid-generator"},
      "coordinator": {"state_dir": ")" + (dir.path() / "state").string() +
                                                R"("}})");
  // deltaSeconds 1000 << 35 | worker 3 << 13 | sequence 9, as DefaultUidGenerator composes it.
  const std::uint64_t id = (std::uint64_t{1000} << 35) | (3u << 13) | 9u;
  const auto decoded =
      run_process({snowflaked_binary(), "decode", std::to_string(id), "--config", config.string()});
  REQUIRE(decoded.status.code == 0);
  const auto j = nlohmann::json::parse(decoded.out);
  CHECK(j["time"] == "2016-05-19T16:16:40.000Z");
  CHECK(j["worker_id"] == 3);
  CHECK(j["sequence"] == 9);
  for (const auto& command :
       {std::vector<std::string>{snowflaked_binary(), "check-config", config.string()},
        std::vector<std::string>{snowflaked_binary(), "--config", config.string()}}) {
    const auto r = run_process(command, 20s);
    INFO(command[1]);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Catch::Contains("layout: its time range ended at 2024-11-20T13:24:16.000Z"));
  }
}

TEST_CASE("decode rejects what is not an ID", "[cli]") {
  for (const char* bad : {"abc", "9223372036854775808", "1.5"}) {
    const auto r = run_process({snowflaked_binary(), "decode", bad});
    INFO(bad);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Catch::Contains("is not an ID"));
  }
}

TEST_CASE("check-config: OK, or exit 2 naming file and key", "[cli]") {
  TempDir dir;
  const auto good = dir.write("good.json", R"({"coordinator": {"static_worker_id": 3}})");
  const auto ok = run_process({snowflaked_binary(), "check-config", good.string()});
  CHECK(ok.status.code == 0);
  CHECK_THAT(ok.out, Catch::StartsWith(good.string() + ": OK (static; 41/10/12"));
  const auto zk = dir.write(
      "zk.json", R"({"coordinator": {"type": "sequential"}, "zookeeper": {"hosts": "zk1:2181"}})");
  const auto zk_ok = run_process({snowflaked_binary(), "check-config", zk.string()});
  CHECK(zk_ok.status.code == 0);
  CHECK_THAT(
      zk_ok.out,
      Catch::StartsWith(zk.string() + ": OK (sequential via ZooKeeper zk1:2181 at /snowflake/"));

  const auto bad = dir.write("config.json", R"({"layout": {"time_bits": 70}})");
  const auto r = run_process({snowflaked_binary(), "check-config", bad.string()});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Catch::Contains("config.json: layout.time_bits: must be"));

  const auto typo = dir.write("typo.json", R"({"coordinater": {}})");
  const auto t = run_process({snowflaked_binary(), "check-config", typo.string()});
  CHECK(t.status.code == 2);
  CHECK_THAT(t.err, Catch::Contains("typo.json: coordinater: unknown key"));
}

TEST_CASE("settings from the environment: over the file, under the command line", "[cli]") {
  TempDir dir;
  const auto config = dir.write(
      "c.json", R"({"service": "file", "coordinator": {"static_worker_id": 5, "state_dir": ")" +
                    (dir.path() / "state").string() + R"("}})");
  const auto checked = run_process({snowflaked_binary(), "check-config", config.string()});
  CHECK_THAT(checked.out, Catch::StartsWith(config.string() + ": OK (static"));
  // SNOWFLAKED_LISTEN names an address this machine lacks; --listen takes precedence.
  ChildProcess shown({snowflaked_binary(), "--config", config.string(), "--listen", "127.0.0.1:0"},
                     {{"SNOWFLAKED_SERVICE", "from-env"}, {"SNOWFLAKED_LISTEN", "192.0.2.1:80"}});
  REQUIRE(shown.wait_for_stderr("started", 10s));
  CHECK_THAT(shown.stderr_text(), Catch::Contains("service from-env"));
  CHECK_THAT(shown.stderr_text(), Catch::Contains("listening on 127.0.0.1:"));
  shown.send_signal(SIGTERM);
  REQUIRE(shown.wait_for_exit(10s));
  CHECK(shown.wait_for_exit(0ms)->code == 0);

  const auto bad = run_process({"/usr/bin/env", "SNOWFLAKED_DATACENTER_ID=x", snowflaked_binary(),
                                "check-config", config.string()});
  CHECK(bad.status.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("coordinator.datacenter_id (SNOWFLAKED_DATACENTER_ID): "
                                      "must be a whole number"));
}

TEST_CASE("every shipped config in conf/ is valid", "[cli]") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SNOWFLAKE_SOURCE_DIR "/conf")) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    const auto r = run_process({snowflaked_binary(), "check-config", entry.path().string()});
    CHECK(r.status.code == 0);
    ++checked;
  }
  CHECK(checked >= 3);  // local, sequential, recycle
}

TEST_CASE("a lease rule broken in the config: exit 2 naming the key", "[cli]") {
  TempDir dir;
  const auto bad = dir.write("lease.json", R"({"coordinator": {"type": "recycle",
      "lease_timeout_ms": 600000, "reclaim_after_ms": 600000}})");
  const auto r =
      run_process({snowflaked_binary(), "--config", bad.string(), "--listen", "127.0.0.1:0"});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Catch::Contains("lease.json: coordinator.reclaim_after_ms: must be at least"));
}

TEST_CASE("the daemon refuses a bad config with exit 2", "[cli]") {
  TempDir dir;
  const auto bad = dir.write("config.json", R"({"coordinator": {"static_worker_id": -1}})");
  const auto r = run_process({snowflaked_binary(), "--config", bad.string()});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Catch::Contains("config.json: coordinator.static_worker_id: must be from 0"));
  const auto listen = run_process({snowflaked_binary(), "--listen", "localhost:80"});
  CHECK(listen.status.code == 2);
  CHECK_THAT(listen.err, Catch::Contains("--listen: must be IPv4:port or [IPv6]:port"));
  const auto level = run_process({snowflaked_binary(), "--log-level", "loud"});
  CHECK(level.status.code == 2);
  CHECK_THAT(level.err, Catch::Contains("--log-level"));
}

TEST_CASE("a number no config can hold (1e309, 2^64): exit 2 naming the key, not an abort",
          "[cli][safety]") {
  TempDir dir;
  const auto huge = dir.write("huge.json", R"({"coordinator": {"type": "recycle",
      "reclaim_after_ms": 1e309}})");
  const auto r =
      run_process({snowflaked_binary(), "--config", huge.string(), "--listen", "127.0.0.1:0"});
  CHECK(r.status.code == 2);
  CHECK(r.status.signal == 0);
  CHECK_THAT(r.err, Catch::Contains("huge.json: coordinator.reclaim_after_ms: not a number"));
  const auto wide =
      dir.write("wide.json", R"({"coordinator": {"lease_timeout_ms": 18446744073709551616}})");
  const auto w = run_process({snowflaked_binary(), "check-config", wide.string()});
  CHECK(w.status.code == 2);
  CHECK_THAT(w.err, Catch::Contains("wide.json: coordinator.lease_timeout_ms: must be an integer"));
}

TEST_CASE("impossible timings: exit 2 naming the key", "[cli][safety]") {
  TempDir dir;
  const auto slow = dir.write("slow.json", R"({"coordinator": {"persist_interval_ms": 1000}})");
  const auto r = run_process({snowflaked_binary(), "check-config", slow.string()});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("slow.json: coordinator.max_boot_wait_ms: must be at least 10 x "
                             "persist_interval_ms"));
}

TEST_CASE("the daemon starts in static mode and stops on SIGTERM with exit 0", "[cli]") {
  TempDir dir;
  const auto config =
      dir.write("c.json", R"({"coordinator": {"static_worker_id": 42, "state_dir": ")" +
                              (dir.path() / "state").string() + R"("}})");
  ChildProcess daemon(
      {snowflaked_binary(), "--config", config.string(), "--listen", "127.0.0.1:0"});
  REQUIRE(daemon.wait_for_stderr("started", 10s));
  CHECK_THAT(daemon.stderr_text(), Catch::Contains("worker 42 (static)"));
  daemon.send_signal(SIGTERM);
  const auto status = daemon.wait_for_exit(10s);
  REQUIRE(status.has_value());
  CHECK(status->code == 0);
  CHECK_THAT(daemon.stderr_text(), Catch::Contains("received SIGTERM"));
}
