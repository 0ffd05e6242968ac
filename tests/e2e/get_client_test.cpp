// `snowflaked get`, the failover client, against real daemons: a stopped
// replica, one whose lease has expired, one that hangs, all of them down,
// and a count over the replicas' max_batch.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>
#include <thread>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/fault_proxy.hpp"
#include "../support/id_fields.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::string url(unsigned short port) { return "http://127.0.0.1:" + std::to_string(port); }

std::string static_config(int worker, int max_batch = 10'000) {
  return json{{"coordinator", {{"type", "static"}, {"static_worker_id", worker}}},
              {"http", {{"max_batch", max_batch}}}}
      .dump();
}

RunResult get(const std::string& servers, std::vector<std::string> more = {}) {
  std::vector<std::string> argv{snowflaked_binary(), "get", "--servers", servers};
  argv.insert(argv.end(), more.begin(), more.end());
  return run_process(argv);
}

std::vector<std::uint64_t> ids_of(const std::string& out) {
  std::vector<std::uint64_t> ids;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) ids.push_back(std::stoull(line));
  return ids;
}

// A recycle daemon whose ZooKeeper is paused until it refuses with 503.
struct LapsedReplica {
  LapsedReplica() {
    wait_ready(daemon);
    zk.pause();
    REQUIRE(eventually([&] { return !error_of(http_get(daemon.port(), "/id/x")).empty(); }, 10s));
  }
  ~LapsedReplica() { zk.resume(); }  // the daemon then stops as usual
  LapsedReplica(const LapsedReplica&) = delete;
  LapsedReplica& operator=(const LapsedReplica&) = delete;
  // How many /id requests it refused with 503.
  std::int64_t refusals() const {
    const auto r = http_get(daemon.port(), "/metrics");
    if (!r) return -1;
    const std::string key = "snowflake_http_requests_total{route=\"id\",code=\"503\"} ";
    const auto at = r->body.find(key);
    return at == std::string::npos ? 0 : std::stoll(r->body.substr(at + key.size()));
  }
  ZooKeeperServer zk;
  TempDir state;
  Daemon daemon{cluster_config(zk.hosts(), "recycle", state.path()).dump()};
};

}  // namespace

TEST_CASE(
    "get: IDs from the replica that can issue, past a stopped one and one whose lease expired",
    "[get]") {
  auto stopped = std::make_unique<Daemon>(static_config(1));
  const auto stopped_port = stopped->port();
  stop(*stopped);
  LapsedReplica lapsed;
  Daemon healthy(static_config(7));
  const std::string servers =
      url(stopped_port) + "," + url(lapsed.daemon.port()) + "," + url(healthy.port());
  // The order is random: several calls try the replicas in several orders.
  for (int i = 0; i < 6; ++i) {
    const auto r = get(servers, {"--count", "3"});
    INFO(r.err);
    REQUIRE(r.status.code == 0);
    const auto ids = ids_of(r.out);
    REQUIRE(ids.size() == 3);
    for (auto id : ids) CHECK(default_layout_worker(id) == 7);
    CHECK(r.err.empty());
  }
  const auto r = get(servers, {"order", "--count", "2", "--json"});
  REQUIRE(r.status.code == 0);
  const auto answer = json::parse(r.out);
  CHECK(answer["tag"] == "order");
  CHECK(answer["ids"].size() == 2);
}

TEST_CASE("get: every replica down: exit 1 at once, naming each replica's last error", "[get]") {
  auto a = std::make_unique<Daemon>(static_config(1));
  const auto a_port = a->port();
  stop(*a);
  LapsedReplica lapsed;
  const auto started = std::chrono::steady_clock::now();
  // A refused connection has no Retry-After: nothing to wait for. The lapsed
  // replica's says 1 s, which a deadline of 800 ms cannot wait out.
  const auto r = get(url(a_port) + "," + url(lapsed.daemon.port()), {"--timeout", "800"});
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(r.status.code == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(url(a_port) + " (connection refused)"));
  const bool lapsed_named =
      r.err.find(url(lapsed.daemon.port()) + " (lease_expired)") != std::string::npos ||
      r.err.find(url(lapsed.daemon.port()) + " (not_ready)") != std::string::npos;
  CHECK(lapsed_named);
}

TEST_CASE("get: a replica that hangs gets its share of the deadline, then the next is asked",
          "[get]") {
  Daemon healthy(static_config(7));
  Daemon hanging(static_config(8));
  FaultProxy proxy(hanging.port());
  proxy.stall();
  const std::string servers = url(proxy.port()) + "," + url(healthy.port());
  for (int i = 0; i < 4; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const auto r = get(servers, {"--timeout", "2000"});
    const auto took = std::chrono::steady_clock::now() - started;
    INFO(r.err);
    REQUIRE(r.status.code == 0);
    CHECK(default_layout_worker(ids_of(r.out).at(0)) == 7);
    // Half of the 2 s for the hanging one at most, then the healthy one.
    CHECK(took < 1900ms);
  }
  const auto r = get(url(proxy.port()), {"--timeout", "500"});
  CHECK(r.status.code == 1);
  CHECK_THAT(r.err, Catch::Contains(url(proxy.port()) + " (timed out)"));
  proxy.heal();
}

TEST_CASE("get: all replicas refuse with 503: Retry-After is waited out, then IDs", "[get]") {
  LapsedReplica lapsed;
  // ZooKeeper comes back only once the client has been refused: the client
  // must have waited and asked again to get its IDs.
  std::thread revive([&] {
    (void)eventually([&] { return lapsed.refusals() >= 1; }, 20s);
    lapsed.zk.resume();
  });
  const auto r = get(url(lapsed.daemon.port()), {"--timeout", "20000"});
  revive.join();
  INFO(r.err);
  REQUIRE(r.status.code == 0);
  CHECK(ids_of(r.out).size() == 1);
  CHECK(lapsed.refusals() >= 1);
}

TEST_CASE("get: a count over the replicas' max_batch is a clear error, not fewer IDs", "[get]") {
  Daemon d(static_config(7, 100));
  const auto r = get(url(d.port()), {"--count", "101"});
  CHECK(r.status.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("bad_count"));
  CHECK_THAT(r.err, Catch::Contains("from 1 to 100"));
  const auto ok = get(url(d.port()), {"--count", "100"});
  REQUIRE(ok.status.code == 0);
  CHECK(ids_of(ok.out).size() == 100);
}

TEST_CASE("get: usage errors exit 2", "[get]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {snowflaked_binary(), "get", "bad tag"},
           {snowflaked_binary(), "get", "--count", "0"},
           {snowflaked_binary(), "get", "a", "b"},
           {snowflaked_binary(), "get", "--servers", "ftp://x:1"},
           {snowflaked_binary(), "get", "--servers", "http://x:1/id"},
           {snowflaked_binary(), "get", "--servers", "http://x:99999"}}) {
    const auto r = run_process(args);
    INFO(args.back());
    CHECK(r.status.code == 2);
    CHECK(r.out.empty());
    CHECK_FALSE(r.err.empty());
  }
}
