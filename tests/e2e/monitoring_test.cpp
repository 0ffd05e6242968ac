// What Prometheus and Grafana see, checked with Prometheus' own tool
// (promtool, Debian's prometheus package): a real scrape, the alert rules
// and their unit tests, and the queries of the dashboard and the alerts.

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

const std::string kSource = SNOWFLAKE_SOURCE_DIR;

// Renamed metrics served one more release under their old names
// (docs/monitoring.md#metrics): promtool's naming lint rightly objects to those
// names. None at present (snowflake_clock_skew_ms went in 0.4.0).
const std::set<std::string> kDeprecatedAliases{};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string scrape(const Daemon& d) {
  const auto r = http_get(d.port(), "/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

// A recycle daemon after a reaper pass, a refusal and some IDs: every
// series it can serve is there.
struct Scraped {
  Scraped() {
    wait_ready(daemon);
    REQUIRE(eventually(
        [&] { return scrape(daemon).find("snowflake_pool_free ") != std::string::npos; }));
    fetch_ids(daemon, 10);
    (void)http_get(daemon.port(), "/id/bad%20tag");
    // A sequence asked for: its per-tag series.
    REQUIRE(run_process({snowflaked_binary(), "seq", "create", "invoice", "--start", "1",
                         "--config", daemon.config_path().string()})
                .status.code == 0);
    REQUIRE(eventually([&] {
      const auto r = http_get(daemon.port(), "/seq/invoice");
      return r && r->status == 200;
    }));
    // A strict one, owned here: its ownership series.
    REQUIRE(run_process({snowflaked_binary(), "seq", "create", "chat", "--order", "strict",
                         "--config", daemon.config_path().string()})
                .status.code == 0);
    REQUIRE(eventually([&] {
      const auto r = http_get(daemon.port(), "/seq/chat");
      return r && r->status == 200;
    }));
    text = scrape(daemon);
  }
  ZooKeeperServer zk;
  TempDir state;
  Daemon daemon{cluster_config(zk.hosts(), "recycle", state.path()).dump()};
  std::string text;
};

bool has_series(const std::string& scrape, const std::string& name) {
  const std::regex line("(^|\n)" + name + "[ {]");
  return std::regex_search(scrape, line);
}

}  // namespace

TEST_CASE("monitoring: a real scrape passes promtool check metrics", "[monitoring]") {
  Scraped s;
  TempDir dir;
  const auto file = dir.write("scrape.txt", s.text);
  const auto r =
      run_process({"/bin/bash", "-c", "promtool check metrics < '" + file.string() + "'"});
  INFO(r.out << r.err);
  // Each finding is one line naming its metric; only deprecated aliases may have one.
  std::istringstream findings(r.out + r.err);
  int others = 0;
  for (std::string finding; std::getline(findings, finding);) {
    const bool alias =
        std::any_of(kDeprecatedAliases.begin(), kDeprecatedAliases.end(),
                    [&](const std::string& a) { return finding.starts_with(a + " "); });
    if (!alias) ++others;
  }
  CHECK(others == 0);
  // New names in seconds, as Prometheus' conventions have them.
  for (const char* name :
       {"snowflake_clock_skew_seconds", "snowflake_heartbeat_age_seconds",
        "snowflake_lease_remaining_seconds", "snowflake_pool_size", "snowflake_pool_free",
        "snowflake_refusals_total", "snowflake_http_request_duration_seconds_bucket",
        "snowflake_ready", "snowflake_worker_id", "process_cpu_seconds_total",
        "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"}) {
    INFO(name);
    CHECK(has_series(s.text, name));
  }
}

TEST_CASE("monitoring: the alert rules load and their unit tests pass", "[monitoring]") {
  const std::string dir = kSource + "/contrib/prometheus";
  const auto check = run_process({"/usr/bin/promtool", "check", "rules", dir + "/alerts.yml"});
  INFO(check.out << check.err);
  CHECK(check.status.code == 0);
  const auto test =
      run_process({"/bin/bash", "-c", "cd '" + dir + "' && promtool test rules alerts_test.yml"});
  INFO(test.out << test.err);
  CHECK(test.status.code == 0);
}

TEST_CASE("monitoring: every metric the dashboard and the alerts query is served", "[monitoring]") {
  Scraped s;
  const std::regex metric("snowflake_[a-z_]+");
  for (const std::string file :
       {"/contrib/grafana/snowflaked.json", "/contrib/prometheus/alerts.yml"}) {
    const std::string text = read_file(kSource + file);
    std::set<std::string> names;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), metric);
         it != std::sregex_iterator(); ++it) {
      names.insert(it->str());
    }
    CHECK(names.size() >= 6);
    for (const auto& name : names) {
      // Served with TLS only: tls_test.cpp checks them on a TLS daemon's scrape.
      if (name.starts_with("snowflake_tls_")) continue;
      // Served once a named lease pool exists: lease_pools_test.cpp reads them.
      if (name.starts_with("snowflake_lease_pool_")) continue;
      INFO(file << " queries " << name);
      CHECK(has_series(s.text, name));
    }
  }
}

TEST_CASE(
    "monitoring: the dashboard picks service, datacenter and instance, and every panel follows",
    "[monitoring]") {
  const auto dashboard =
      nlohmann::json::parse(read_file(kSource + "/contrib/grafana/snowflaked.json"));
  std::set<std::string> variables;
  for (const auto& v : dashboard["templating"]["list"])
    variables.insert(v["name"].get<std::string>());
  CHECK(variables == std::set<std::string>{"datasource", "service", "datacenter", "instance"});
  int exprs = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      const auto expr = target["expr"].get<std::string>();
      INFO(expr);
      CHECK_THAT(expr, Catch::Contains("instance=~\"$instance\""));
      ++exprs;
    }
  }
  CHECK(exprs >= 10);
}

TEST_CASE(
    "monitoring: a sequential daemon exports how many worker IDs are left, and every "
    "ZooKeeper-mode daemon its timings, for the alert rules",
    "[monitoring]") {
  ZooKeeperServer zk;
  // 2 worker bits: 4 numbers, never reused. Two daemons with two names use two.
  const nlohmann::json patch = {
      {"layout", {{"time_bits", 41}, {"worker_bits", 2}, {"sequence_bits", 20}}},
      {"coordinator", {{"max_skew_ms", 1500}}}};
  TempDir state_a, state_b;
  auto config_a = cluster_config(zk.hosts(), "sequential", state_a.path(), patch);
  auto config_b = cluster_config(zk.hosts(), "sequential", state_b.path(), patch);
  config_a["coordinator"]["advertise"] = "seq-a:1";
  config_b["coordinator"]["advertise"] = "seq-b:1";
  Daemon a(config_a.dump());
  Daemon b(config_b.dump());
  wait_ready(a);
  wait_ready(b);
  // After a heartbeat each has read how many numbers ZooKeeper handed out.
  CHECK(eventually([&] {
    return metric(a, "snowflake_pool_free") == 2 && metric(b, "snowflake_pool_free") == 2;
  }));
  CHECK(metric(a, "snowflake_pool_size") == 4);
  // A restart under the same name reuses its number: none more is used.
  stop(a);
  Daemon again(config_a.dump());
  wait_ready(again);
  CHECK(eventually([&] { return metric(again, "snowflake_pool_free") == 2; }));

  const auto text = http_get(again.port(), "/metrics")->body;
  for (const char* line : {"\nsnowflake_config_heartbeat_interval_seconds 0.3\n",
                           "\nsnowflake_config_lease_timeout_seconds 1.5\n",
                           "\nsnowflake_config_reclaim_after_seconds 2.5\n",
                           "\nsnowflake_config_max_skew_seconds 1.5\n",
                           // Unset: half of what the lease leaves after a heartbeat.
                           "\nsnowflake_config_restore_grace_seconds 0.6\n"}) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
  // Static mode has no lease or heartbeat to scale anything by.
  Daemon solo(R"({"coordinator":{"type":"static"}})");
  CHECK(http_get(solo.port(), "/metrics")->body.find("snowflake_config_") == std::string::npos);
}
