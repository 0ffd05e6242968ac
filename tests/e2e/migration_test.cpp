// Coming from Leaf or any other ID service: the migration floor (snowflaked
// pool floor, coordinator.min_id) with its contract: once the command exits
// 0, no daemon of the cluster issues an ID at or below N. (Leaf's routes:
// http_api_test.cpp.)

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/id_fields.hpp"
#include "../support/id_load.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/zk_session.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const IdLayout& default_layout() {
  static const IdLayout l = IdLayout::create({}, kDefaultEpochMs).value();
  return l;
}

// The largest ID of the default layout at `ms`: what an old system whose
// clock read `ms` could have issued last.
std::uint64_t largest_id_at(std::int64_t ms) {
  const auto& l = default_layout();
  return l.compose(ms, 0, l.max_worker_id(), l.max_sequence()).value();
}

RunResult pool_floor(const Daemon& any, const std::vector<std::string>& args) {
  std::vector<std::string> argv{snowflaked_binary(), "pool", "floor", "--config",
                                any.config_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 60s);
}

}  // namespace

TEST_CASE(
    "pool floor raised while daemons serve under load: once it exits 0, no ID asked for "
    "after is at or below N",
    "[floor][uniqueness]") {
  ZooKeeperServer zk;
  TempDir s1, s2;
  Daemon a(cluster_config(zk.hosts(), "recycle", s1.path()).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", s2.path()).dump());
  wait_ready(a);
  wait_ready(b);
  // Two clients on each daemon, each request stamped with when it was sent.
  std::vector<std::unique_ptr<IdLoad>> loads;
  for (const auto port : {a.port(), b.port(), a.port(), b.port()}) {
    loads.push_back(std::make_unique<IdLoad>(port, 20));
  }
  const auto answered = [&] {
    std::size_t n = 0;
    for (const auto& l : loads) n += l->issued();
    return n;
  };
  REQUIRE(eventually([&] { return answered() > 2000; }, 20s));
  // N: an ID 6 s ahead (an old system whose clock ran fast): still ahead
  // when the command has exited, however slowly the owners confirm.
  const std::uint64_t n = largest_id_at(wall_ms_now() + 6000);
  const auto r = pool_floor(a, {"--above-id", std::to_string(n)});
  const auto exited = std::chrono::steady_clock::now();
  INFO(r.out << r.err);
  REQUIRE(r.status.code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("confirmed: no daemon of the cluster issues an ID at or below " +
                             std::to_string(n)));
  // Refusing until the floor passes, /ready says why; then above it.
  REQUIRE(wall_ms_now() < default_layout().decompose(n).value().timestamp_ms);
  const auto refused = http_get(a.port(), "/ready");
  CHECK(error_of(refused) == "floor_ahead");
  CHECK(refused->headers.count("retry-after") == 1);
  REQUIRE(eventually([&] { return ready(a).has_value() && ready(b).has_value(); }, 15s));
  const std::size_t seen = answered();
  REQUIRE(eventually([&] { return answered() > seen + 2000; }, 20s));
  std::size_t after = 0, at_or_below = 0, floor_ahead = 0;
  for (const auto& load : loads) {
    load->stop();
    const auto& ids = load->ids();
    for (auto i = load->first_asked_at_or_after(exited); i < ids.size(); ++i) {
      ++after;
      if (ids[i] <= n) ++at_or_below;
    }
    const auto ahead = load->refusals().find("floor_ahead");
    if (ahead != load->refusals().end()) floor_ahead += ahead->second;
  }
  INFO(after << " IDs asked for after the command exited");
  CHECK(after > 2000);
  CHECK(at_or_below == 0);
  CHECK(floor_ahead > 0);
  // /status and pool status show it.
  const auto status = json::parse(http_get(b.port(), "/status")->body);
  CHECK(status["floor"]["ms"] == default_layout().decompose(n).value().timestamp_ms);
  const auto pool = run_process(
      {snowflaked_binary(), "pool", "status", "--config", a.config_path().string(), "--json"});
  CHECK(json::parse(pool.out)["floor"]["above_id"] == std::to_string(n));
  // It only ever rises.
  const auto lower = pool_floor(a, {"--above-id", "12345"});
  CHECK(lower.status.code == 0);
  CHECK(json::parse(run_process({snowflaked_binary(), "pool", "status", "--config",
                                 a.config_path().string(), "--json"})
                        .out)["floor"]["above_id"] == std::to_string(n));
}

TEST_CASE(
    "pool floor --from-leaf: a Leaf tree as Leaf writes it, one server's clock fast: no ID "
    "at or below any Leaf could have issued, across restarts, reclaims, takeovers and new daemons",
    "[floor][leaf][uniqueness]") {
  ZooKeeperServer zk;
  auto session = connect_session(zk.hosts());
  // SnowflakeZookeeperHolder: /snowflake/<leaf.name>/forever/<ip:port>-<seq>,
  // {"ip","port","timestamp"} (Jackson writes the port as a string).
  const std::int64_t now = wall_ms_now();
  const std::int64_t fast = now + 60'000;  // a Leaf server whose clock ran a minute ahead
  REQUIRE(session->ensure_path("/snowflake/leaf/forever"));
  REQUIRE(session->create(
      "/snowflake/leaf/forever/10.0.0.1:8080-0000000000",
      json{{"ip", "10.0.0.1"}, {"port", "8080"}, {"timestamp", now - 1000}}.dump()));
  REQUIRE(session->create("/snowflake/leaf/forever/10.0.0.2:8080-0000000001",
                          json{{"ip", "10.0.0.2"}, {"port", "8080"}, {"timestamp", fast}}.dump()));
  // The largest ID Leaf can have issued: the fast clock, + 3 s of Leaf's
  // report interval, + the config's safety margin (500 ms).
  const std::int64_t leaf_until = fast + 3000 + 500;
  const std::uint64_t leaf_max = leaf_largest_id_at(leaf_until);
  // The daemons' wall clocks: real time while they claim under the floor,
  // then stepped past it (so the test need not wait a minute for it); a
  // max_skew that allows the step.
  TempDir clocks;
  WallClockOffset clock(clocks.path() / "offset");
  const auto leaf_config = [&](const std::string& type, const TempDir& state,
                               json coordinator = json::object()) {
    coordinator["max_skew_ms"] = 120'000;
    return cluster_config(zk.hosts(), type, state.path(),
                          json{{"layout", {{"preset", "leaf"}}}, {"coordinator", coordinator}})
        .dump();
  };
  const auto start = [&](std::optional<Daemon>& d, const std::string& config) {
    d.emplace(config, "127.0.0.1:0", clock.env());
  };
  const auto import_leaf = [&](const Daemon& any) {
    const auto r = pool_floor(any, {"--from-leaf", "/snowflake/leaf"});
    INFO(r.out << r.err);
    REQUIRE(r.status.code == 0);
    CHECK_THAT(
        r.out,
        Catch::Contains("10.0.0.2:8080-0000000001") && Catch::Contains(format_iso8601_ms(fast)) &&
            Catch::Contains("the largest ID Leaf can have issued is " + std::to_string(leaf_max)));
    CHECK(error_of(http_get(any.port(), "/id/x")) == "floor_ahead");
  };
  const auto kill9 = [](std::optional<Daemon>& d) {
    d->process().send_signal(SIGKILL);
    d->process().wait_for_exit(10s);
  };
  // A daemon that took its worker ID while the floor was ahead: it owns one
  // (so it is past the claim) and refuses with floor_ahead.
  const auto claimed_under_floor = [&](std::optional<Daemon>& d) {
    REQUIRE(
        eventually([&] { return error_of(http_get(d->port(), "/id/x")) == "floor_ahead"; }, 20s));
    REQUIRE(wall_ms_now() <
            leaf_until);  // still ahead of the real clock: the check meant something
  };
  // Then, past the floor, every daemon's IDs are above what Leaf could have issued.
  const auto all_above_leaf = [&](std::initializer_list<std::optional<Daemon>*> daemons) {
    clock.set_ms(leaf_until - wall_ms_now() + 5000);
    std::vector<std::uint64_t> ids;
    REQUIRE(eventually(
        [&] {
          for (auto* d : daemons) {
            const auto got = fetch_ids(**d, 50);
            ids.insert(ids.end(), got.begin(), got.end());
          }
          return ids.size() >= 400;
        },
        30s));
    std::size_t at_or_below = 0;
    for (const auto id : ids) at_or_below += id <= leaf_max ? 1 : 0;
    CHECK(at_or_below == 0);
  };

  TempDir s1, s2, s3;
  std::optional<Daemon> a, b, c, a2, b2;
  SECTION("sequential: a new daemon, and kill -9 then a restart on the same state (takeover)") {
    start(a, leaf_config("sequential", s1));
    wait_ready(*a);
    import_leaf(*a);
    start(b, leaf_config("sequential", s2, {{"advertise", "b:1"}}));
    kill9(a);
    start(a2, leaf_config("sequential", s1));
    claimed_under_floor(b);
    claimed_under_floor(a2);
    all_above_leaf({&a2, &b});
  }
  SECTION("recycle: a worker ID reclaimed from a killed daemon, and a takeover") {
    start(a, leaf_config("recycle", s1));
    start(b, leaf_config("recycle", s2));
    const auto a_worker = wait_ready(*a);
    wait_ready(*b);
    import_leaf(*a);
    kill9(a);
    // b's reaper gives a's worker ID back to the pool once its lease lapsed.
    REQUIRE(eventually([&] { return metric(*b, "snowflake_workers_reclaimed_total") >= 1; }, 15s));
    start(c, leaf_config("recycle", s3));
    INFO("the killed daemon had worker ID " << a_worker);
    claimed_under_floor(c);
    kill9(b);
    start(b2, leaf_config("recycle", s2));
    claimed_under_floor(b2);
    all_above_leaf({&c, &b2});
  }
}

TEST_CASE("pool floor waits for every live owner: one that cannot confirm is named, exit 1",
          "[floor]") {
  ZooKeeperServer zk;
  TempDir s1, s2;
  Daemon a(cluster_config(zk.hosts(), "recycle", s1.path()).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", s2.path()).dump());
  wait_ready(a);
  const auto b_worker = wait_ready(b);
  // b hangs with its session alive (the session outlives the command's wait).
  b.process().send_signal(SIGSTOP);
  const auto r = pool_floor(
      a, {"--above-id", std::to_string(largest_id_at(wall_ms_now())), "--timeout", "1000"});
  b.process().send_signal(SIGCONT);
  INFO(r.out << r.err);
  CHECK(r.status.code == 1);
  CHECK_THAT(r.err, Catch::Contains("worker ID " + std::to_string(b_worker) + ":") &&
                        Catch::Contains("has not confirmed the floor"));
  // Once it runs again it confirms, and the command succeeds.
  const auto again = pool_floor(a, {"--above-id", std::to_string(largest_id_at(wall_ms_now()))});
  CHECK(again.status.code == 0);
}

TEST_CASE("coordinator.min_id: static mode's floor, and a bad one names the key", "[floor]") {
  // 5 s ahead: still ahead once the daemon has started on a loaded machine
  // (800 ms was not, under scripts/busy-cores.sh).
  const std::int64_t floor_ms = wall_ms_now() + 5000;
  const std::uint64_t n = largest_id_at(floor_ms);
  Daemon d(json{{"coordinator", {{"type", "static"}, {"min_id", std::to_string(n)}}}}.dump());
  const auto first = http_get(d.port(), "/id/x");
  REQUIRE(wall_ms_now() < floor_ms);  // asked before the floor: the check means something
  CHECK(error_of(first) == "floor_ahead");
  std::vector<std::uint64_t> ids;
  REQUIRE(eventually([&] { return !(ids = fetch_ids(d, 10)).empty(); }, 20s));
  CHECK(ids.front() > n);
  CHECK(json::parse(http_get(d.port(), "/status")->body)["floor"]["time"] ==
        format_iso8601_ms(default_layout().decompose(n).value().timestamp_ms));
  TempDir dir;
  const auto bad = dir.write("bad.json", R"({"coordinator": {"type": "recycle", "min_id": 5}})");
  const auto r = run_process({snowflaked_binary(), "check-config", bad.string()});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Catch::Contains("coordinator.min_id: is for static mode"));
}
