// CosId's proxy API, from the requests CosId's ProxyMachineIdDistributor
// sends (cosid-proxy: distributeRemote, guardRemote, revertRemote): the
// URL shapes, java.time.Duration's spelling of safeGuardDuration, and the
// answers and error codes it reads ({"machineId","lastTimeStamp"}; M-01
// overflow, M-02 not found, M-03 lost), over the real snowflaked and a real
// ZooKeeper.

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "lease_holder.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json cosid_config(const ZooKeeperServer& zk, const TempDir& state) {
  return cluster_config(zk.hosts(), "recycle", state.path(),
                        {{"layout", {{"worker_bits", 3}, {"sequence_bits", 19}}},
                         {"coordinator", {{"max_skew_ms", 200}}},
                         {"leases", {{"enabled", true}, {"reserved_worker_ids", 0}}}});
}

// As CosId formats them:
// "%s/machines/%s?instanceId=%s&stable=%s&machineBit=%s&safeGuardDuration=%s".
std::string distribute(const std::string& ns, const std::string& instance, int bits,
                       const std::string& guard = "PT1.5S") {
  return fmt::format("/machines/{}?instanceId={}&stable=false&machineBit={}&safeGuardDuration={}",
                     ns, instance, bits, guard);
}
std::string guard(const std::string& ns, const std::string& instance) {
  return fmt::format("/machines/{}?instanceId={}&stable=false&safeGuardDuration=PT1.5S", ns,
                     instance);
}
std::string revert(const std::string& ns, const std::string& instance) {
  return fmt::format("/machines/{}?instanceId={}&stable=false", ns, instance);
}

struct Answer {
  unsigned status = 0;
  json body;
};

Answer send(const Daemon& d, const std::string& method, const std::string& target) {
  const auto r = ask_lease(d, method, target);
  REQUIRE(r);
  INFO(method << " " << target << ": " << r->body);
  return {r->status, json::parse(r->body)};
}

}  // namespace

TEST_CASE(
    "CosId's proxy API: distribute, guard and revert as CosId sends them, M-01 when full, M-02 "
    "for an instance without one, M-03 once its lease was reclaimed",
    "[coord][leases][cosid]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(cosid_config(zk, sa).dump());
  wait_ready(a);
  const std::int64_t asked_at = wall_ms_now();

  // A namespace of 2 machine IDs (machineBit 1), made by its first distribute.
  const Answer first = send(a, "POST", distribute("order-service", "10.0.0.7:8080", 1));
  REQUIRE(first.status == 200);
  CHECK(first.body.size() == 2);
  const auto first_id = first.body["machineId"].get<std::uint32_t>();
  CHECK(first_id <= 1);
  // At a whole second, and already past: CosId checks its clock against it.
  CHECK(first.body["lastTimeStamp"].get<std::int64_t>() % 1000 == 0);
  CHECK(first.body["lastTimeStamp"].get<std::int64_t>() <= wall_ms_now());
  const Answer second = send(a, "POST", distribute("order-service", "10.0.0.8:8080", 1));
  REQUIRE(second.status == 200);
  CHECK(second.body["machineId"].get<std::uint32_t>() == 1 - first_id);
  // Full: M-01 (MachineIdOverflowException).
  const Answer full = send(a, "POST", distribute("order-service", "10.0.0.9:8080", 1));
  CHECK(full.status == 503);
  CHECK(full.body["code"] == "M-01");
  CHECK(full.body.contains("msg"));

  // Guarded: its lease goes on (its time fence moves on). An instance that
  // holds none: M-02.
  const auto fence_of = [&](std::uint32_t id) -> std::int64_t {
    const auto listed = run_process(
        {snowflaked_binary(), "lease", "list", "--json", "--config", a.config_path().string()},
        30s);
    for (const auto& l : json::parse(listed.out)) {
      if (l["pool"] == "order-service" && l["worker_id"] == id) return l["fence_ms"];
    }
    return -1;
  };
  const std::int64_t fence_before = fence_of(first_id);
  REQUIRE(fence_before > 0);
  REQUIRE(eventually([&] { return wall_ms_now() > fence_before - 1400; }, 5s));
  CHECK(send(a, "PATCH", guard("order-service", "10.0.0.7:8080")).status == 200);
  CHECK(fence_of(first_id) > fence_before);
  const Answer unknown = send(a, "PATCH", guard("order-service", "10.0.0.99:8080"));
  CHECK(unknown.status == 404);
  CHECK(unknown.body["code"] == "M-02");

  // Reverted: its machine ID is free for the next instance, which starts
  // past the first one's lease; guarding it again is M-02.
  CHECK(send(a, "DELETE", revert("order-service", "10.0.0.7:8080")).status == 200);
  CHECK(send(a, "PATCH", guard("order-service", "10.0.0.7:8080")).body["code"] == "M-02");
  // (Right after the revert the freed ID's floor, the first one's fence, may
  // lie past the end of a lease as short as this test's 1.5 s: 503
  // lease_unavailable until it does not.)
  Answer third;
  REQUIRE(eventually(
      [&] {
        // The second guarded meanwhile: its machine ID stays its own.
        CHECK(send(a, "PATCH", guard("order-service", "10.0.0.8:8080")).status == 200);
        third = send(a, "POST", distribute("order-service", "10.0.0.9:8080", 1));
        if (third.status == 503) CHECK(third.body["code"] == "lease_unavailable");
        return third.status == 200;
      },
      10s));
  CHECK(third.body["machineId"] == first_id);
  CHECK(third.body["lastTimeStamp"].get<std::int64_t>() > asked_at + 1500);

  // The second goes silent: reclaimed once its lease and the margin are
  // over, its next guard is M-03 (MachineIdLostException), then M-02.
  const auto second_id = second.body["machineId"].get<std::uint32_t>();
  REQUIRE(eventually(
      [&] {
        auto s = connect(zk);
        return s
            ->exists(
                fmt::format("{}/lease_pools/order-service/pool/notuse/{}", kE2eRoot, second_id))
            .value()
            .has_value();
      },
      30s));
  const Answer lost = send(a, "PATCH", guard("order-service", "10.0.0.8:8080"));
  CHECK(lost.status == 410);
  CHECK(lost.body["code"] == "M-03");
  CHECK(send(a, "PATCH", guard("order-service", "10.0.0.8:8080")).body["code"] == "M-02");
}

TEST_CASE(
    "CosId's proxy API: an instance distributed again while its lease runs gives the old machine "
    "ID back at its lease's end, not now",
    "[coord][leases][cosid]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(cosid_config(zk, sa).dump());
  wait_ready(a);
  const Answer before = send(a, "POST", distribute("restart-ns", "pod-1", 1));
  REQUIRE(before.status == 200);
  const auto old_id = before.body["machineId"].get<std::uint32_t>();
  const std::int64_t asked = wall_ms_now();
  const Answer after = send(a, "POST", distribute("restart-ns", "pod-1", 1));
  REQUIRE(after.status == 200);
  // The old one's floor is its fence, still ahead: not handed out again
  // yet (CosId would have to wait it out), so the other one is.
  CHECK(after.body["machineId"] != old_id);
  auto s = connect(zk);
  const auto freed =
      s->get(fmt::format("{}/lease_pools/restart-ns/pool/notuse/{}", kE2eRoot, old_id)).value();
  CHECK(coord::decode_notuse(freed.data)->floor >= asked + 1000);
  // Guarded, it renews the new one.
  CHECK(send(a, "PATCH", guard("restart-ns", "pod-1")).status == 200);
}

TEST_CASE("CosId's proxy API: bad requests get CosId's 400 and change nothing",
          "[coord][leases][cosid]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(cosid_config(zk, sa).dump());
  wait_ready(a);
  for (const std::string target :
       {"/machines/ns?stable=false&machineBit=4&safeGuardDuration=PT1S",  // no instanceId
        "/machines/ns?instanceId=i&stable=false&safeGuardDuration=PT1S",  // no machineBit
        "/machines/ns?instanceId=i&stable=false&machineBit=4",            // no guard
        "/machines/ns?instanceId=i&stable=maybe&machineBit=4&safeGuardDuration=PT1S",
        "/machines/ns?instanceId=i&stable=false&machineBit=17&safeGuardDuration=PT1S",
        "/machines/ns?instanceId=a%20b&stable=false&machineBit=4&safeGuardDuration=PT1S",
        "/machines/ns?instanceId=i&instanceId=j&machineBit=4&safeGuardDuration=PT1S"}) {
    INFO(target);
    const Answer r = send(a, "POST", target);
    CHECK(r.status == 400);
    CHECK(r.body["code"] == "400");
  }
  // Durations: not Java's spelling, zero, signed, out of order, twice, a
  // trailing T, CosId's FOREVER, and longer than this cluster's leases
  // (1.5 s here: CosId would stamp past the lease) are refused.
  for (const std::string d :
       {"5m", "P", "PT", "PT0S", "PT-0S", "PT1S1S", "PT1S1H", "P1DT", "P1H", "PT1D", "PT1.S",
        "PT0.5M", "PT2562047788015H59M59.999999999S", "PT5M", "PT1.501S"}) {
    INFO(d);
    const Answer r = send(a, "POST", distribute("ns", "i", 4, d));
    CHECK(r.status == 400);
    CHECK(r.body["code"] == "400");
  }
  CHECK(send(a, "GET", "/machines/ns").status == 405);
  // A namespace that is not UTF-8 is quoted in the refusal, replaced, not
  // a crash (found by the fuzzer).
  CHECK(send(a, "POST", distribute("order-s\xff\xffrce", "i", 4, "PT1S")).status == 404);
  CHECK(send(a, "POST", distribute("cluster", "i", 4)).status == 404);
  auto s = connect(zk);
  CHECK_FALSE(s->exists(kE2eRoot + "/lease_pools/ns").value());
  // Java's spellings within the cluster's leases are read (shorter than
  // its shortest: lengthened).
  int instance = 0;
  for (const std::string d : {"PT1S", "PT1.5S", "PT1.25S", "PT0.5S", "PT0.001S"}) {
    INFO(d);
    CHECK(send(a, "POST", distribute("ns", fmt::format("i-{}", ++instance), 4, d)).status == 200);
  }
}

TEST_CASE(
    "CosId's proxy API: an instance's machine ID is guarded and reverted through another daemon, "
    "also once the daemon that distributed it is killed",
    "[coord][leases][cosid]") {
  // CosId's proxy URL may name a load balancer: each request may reach
  // another replica. The lease lives in ZooKeeper, found by the instance.
  ZooKeeperServer zk;
  TempDir sa, sb;
  auto a = std::make_unique<Daemon>(cosid_config(zk, sa).dump());
  Daemon b(cosid_config(zk, sb).dump());
  wait_ready(*a);
  wait_ready(b);
  const Answer first = send(*a, "POST", distribute("failover-ns", "pod-1", 1));
  REQUIRE(first.status == 200);
  const auto id = first.body["machineId"].get<std::uint32_t>();
  const Answer guarded = send(b, "PATCH", guard("failover-ns", "pod-1"));
  CHECK(guarded.status == 200);
  CHECK(guarded.body["machineId"] == id);

  a->process().send_signal(SIGKILL);
  a.reset();
  const Answer after_kill = send(b, "PATCH", guard("failover-ns", "pod-1"));
  CHECK(after_kill.status == 200);
  CHECK(after_kill.body["machineId"] == id);
  // The other machine ID for another instance; then none is free.
  const Answer other = send(b, "POST", distribute("failover-ns", "pod-2", 1));
  REQUIRE(other.status == 200);
  CHECK(other.body["machineId"].get<std::uint32_t>() == 1 - id);
  CHECK(send(b, "POST", distribute("failover-ns", "pod-3", 1)).body["code"] == "M-01");
  // Reverted through b: gone, and the instance holds nothing there.
  CHECK(send(b, "DELETE", revert("failover-ns", "pod-1")).status == 200);
  CHECK(send(b, "PATCH", guard("failover-ns", "pod-1")).body["code"] == "M-02");
}
