// Named lease pools, over the real snowflaked and a real ZooKeeper: a pool of
// the config and one made on first use with the bits a take asks, each filled
// and refused clearly when full, its silent holders reclaimed by the daemon's
// reaping pass past their fence, the next holder starting at a whole second
// past it; refusals for a pool that may not be made or exists with other
// bits; per-pool figures in /metrics; the cluster's own pool untouched;
// lease list and lease forget.

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

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

// The cluster's 8 worker IDs, pool "sony" of 2 bits from the config, others
// made on first use with up to 3 bits, 3 pools in all.
json pools_config(const ZooKeeperServer& zk, const TempDir& state, bool new_pools = true) {
  return cluster_config(zk.hosts(), "recycle", state.path(),
                        {{"layout", {{"worker_bits", 3}, {"sequence_bits", 19}}},
                         {"coordinator", {{"max_skew_ms", 200}}},
                         {"leases",
                          {{"enabled", true},
                           {"reserved_worker_ids", 0},
                           {"pools", {{"sony", {{"worker_bits", 2}}}}},
                           {"new_pools", new_pools},
                           {"new_pool_max_worker_bits", 3},
                           {"max_pools", 3}}}});
}

std::pair<unsigned, std::string> refused(const Daemon& d, const std::string& query) {
  const auto r = ask_lease(d, "POST", "/v1/leases?" + query);
  REQUIRE(r);
  return {r->status, json::parse(r->body).value("error", "")};
}

std::string pool_node(const std::string& pool) { return kE2eRoot + "/lease_pools/" + pool; }

// A named pool's free worker ID's floor; -1 while it is not free.
std::int64_t free_floor(ZooKeeperServer& zk, const std::string& pool, std::uint32_t id) {
  auto s = connect(zk);
  const auto node = s->try_get(fmt::format("{}/pool/notuse/{}", pool_node(pool), id)).value();
  if (!node) return -1;
  return coord::decode_notuse(node->data)->floor;
}

}  // namespace

TEST_CASE(
    "leases: named pools: the config's and one made on first use, each full on its own bits, a "
    "silent holder reclaimed past its fence, the next at a whole second past it",
    "[coord][leases][safety]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(pools_config(zk, sa).dump());
  wait_ready(a);

  // The config's pool: 4 worker IDs, each holder told its bits, not a layout.
  std::vector<json> sony;
  std::set<std::uint32_t> ids;
  for (int i = 0; i < 4; ++i) {
    sony.push_back(take_lease(a, "holder=sony&pool=sony&duration_ms=1500"));
    const json& l = sony.back();
    CHECK(l["pool"] == "sony");
    CHECK(l["worker_bits"] == 2);
    CHECK_FALSE(l.contains("layout"));
    CHECK(l["first_timestamp_ms"].get<std::int64_t>() % 1000 == 0);
    CHECK(ids.insert(l["worker_id"].get<std::uint32_t>()).second);
  }
  CHECK(*ids.rbegin() == 3);
  CHECK(refused(a, "holder=sony&pool=sony") ==
        std::pair<unsigned, std::string>{503, "pool_exhausted"});
  // Its bits are its own: asked otherwise, a conflict, nothing taken.
  CHECK(refused(a, "holder=sony&pool=sony&worker_bits=3") ==
        std::pair<unsigned, std::string>{409, "pool_conflict"});

  // Made on first use with the bits asked, read from ZooKeeper afterwards.
  const json made = take_lease(a, "holder=cosid&pool=cosid-ns&worker_bits=3");
  CHECK(made["worker_bits"] == 3);
  CHECK(take_lease(a, "holder=cosid&pool=cosid-ns")["worker_bits"] == 3);
  {
    auto s = connect(zk);
    CHECK(json::parse(s->get(pool_node("cosid-ns")).value().data)["worker_bits"] == 3);
  }
  // Within the limits: no bits to make it with, too many bits, too many pools.
  CHECK(refused(a, "holder=x&pool=unknown") ==
        std::pair<unsigned, std::string>{404, "no_such_pool"});
  CHECK(refused(a, "holder=x&pool=wide&worker_bits=4") ==
        std::pair<unsigned, std::string>{404, "no_such_pool"});
  CHECK(take_lease(a, "holder=x&pool=third&worker_bits=1")["worker_id"].get<std::uint32_t>() <= 1);
  CHECK(refused(a, "holder=x&pool=fourth&worker_bits=1") ==
        std::pair<unsigned, std::string>{404, "no_such_pool"});
  CHECK(refused(a, "holder=x&pool=cluster&worker_bits=1") ==
        std::pair<unsigned, std::string>{400, "bad_pool"});

  // The cluster's own pool holds only the daemon's worker ID.
  {
    auto s = connect(zk);
    CHECK(s->children(kE2eRoot + "/pool/inuse").value().size() == 1);
  }

  // Two given back saying their last stamp, two gone silent: the reaping
  // pass returns these once their lease + margin has passed, above their
  // fence; a renewal then is lost.
  const std::int64_t last = sony[0]["first_timestamp_ms"].get<std::int64_t>() + 10;
  for (int i = 0; i < 2; ++i) {
    const auto r = ask_lease(a, "DELETE",
                             fmt::format("/v1/leases/{}?pool=sony&token={}&last_timestamp_ms={}",
                                         sony[i]["worker_id"].get<std::uint32_t>(),
                                         sony[i]["token"].get<std::string>(), last));
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 200);
    CHECK(free_floor(zk, "sony", sony[i]["worker_id"].get<std::uint32_t>()) == last);
  }
  for (int i = 2; i < 4; ++i) {
    const auto id = sony[i]["worker_id"].get<std::uint32_t>();
    CHECK(eventually([&] { return free_floor(zk, "sony", id) >= 0; }, 30s));
    CHECK(free_floor(zk, "sony", id) == sony[i]["max_timestamp_ms"].get<std::int64_t>());
    const auto late = ask_lease(
        a, "PUT",
        fmt::format("/v1/leases/{}?pool=sony&token={}", id, sony[i]["token"].get<std::string>()));
    REQUIRE(late);
    CHECK(late->status == 410);
  }
  // Each next holder starts at the first whole second past its worker ID's floor.
  std::map<std::uint32_t, std::int64_t> floors;
  for (int i = 0; i < 4; ++i) {
    floors[sony[i]["worker_id"].get<std::uint32_t>()] =
        i < 2 ? last : sony[i]["max_timestamp_ms"].get<std::int64_t>();
  }
  for (int i = 0; i < 4; ++i) {
    const json next = take_lease(a, "holder=sony2&pool=sony");
    const std::int64_t floor = floors.at(next["worker_id"].get<std::uint32_t>());
    CHECK(next["first_timestamp_ms"] == (floor / 1000 + 1) * 1000);
  }

  // Per pool in /metrics: the reaping pass's figures, the requests' counts.
  CHECK(eventually([&] { return metric(a, "snowflake_lease_pool_in_use{pool=\"sony\"}") == 4; },
                   30s));
  CHECK(metric(a, "snowflake_lease_pool_size{pool=\"sony\"}") == 4);
  CHECK(metric(a, "snowflake_lease_pool_size{pool=\"cosid-ns\"}") == 8);
  // And in /status, by name, as the same pass saw them.
  {
    const json pools = json::parse(http_get(a.port(), "/status")->body)["leases"]["pools"];
    std::map<std::string, std::pair<int, int>> seen;
    for (const auto& p : pools) seen[p["name"]] = {p["size"], p["in_use"]};
    CHECK(seen.at("sony") == std::pair<int, int>{4, 4});
    CHECK(seen.at("cosid-ns").first == 8);
    CHECK_FALSE(seen.contains("cluster"));
  }
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"sony\",event=\"taken\"}") == 8);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"sony\",event=\"given_back\"}") == 2);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"sony\",event=\"lost\"}") == 2);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"cluster\",event=\"taken\"}") == 0);
}

TEST_CASE(
    "leases: with leases.new_pools false, only the config's pools are leased from, even one "
    "another daemon made, and names never granted from counted as ~other",
    "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  Daemon maker(pools_config(zk, sb, true).dump());
  Daemon a(pools_config(zk, sa, false).dump());
  wait_ready(maker);
  wait_ready(a);
  CHECK(take_lease(maker, "holder=x&pool=cosid-ns&worker_bits=2")["worker_bits"] == 2);
  // Once this daemon's reaping pass has read that pool too (it reads all).
  REQUIRE(eventually([&] { return metric(a, "snowflake_lease_pool_size{pool=\"cosid-ns\"}") == 4; },
                     20s));
  CHECK(refused(a, "holder=x&pool=cosid-ns") ==
        std::pair<unsigned, std::string>{404, "no_such_pool"});
  CHECK(refused(a, "holder=x&pool=elsewhere&worker_bits=2") ==
        std::pair<unsigned, std::string>{404, "no_such_pool"});
  CHECK(take_lease(a, "holder=x&pool=sony")["worker_bits"] == 2);
  // A name anyone may send adds no series of its own.
  const auto r =
      ask_lease(a, "PUT", "/v1/leases/0?pool=zz-random&token=0123456789abcdef0123456789abcdef");
  REQUIRE(r);
  CHECK(r->status == 410);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"~other\",event=\"lost\"}") == 1);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"zz-random\",event=\"lost\"}") == -1);
  CHECK(metric(a, "snowflake_worker_leases_total{pool=\"sony\",event=\"taken\"}") == 1);
}

namespace {

RunResult lease_cli(const Daemon& any, std::vector<std::string> args) {
  std::vector<std::string> argv{snowflaked_binary(), "lease"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--config", any.config_path().string()});
  return run_process(argv, std::chrono::seconds(30));
}

}  // namespace

TEST_CASE(
    "lease list shows every pool's leases, lease forget gives one back above its time fence, its "
    "holder's renewal then lost, a daemon's worker ID or a free one is refused (exit 3)",
    "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(pools_config(zk, sa).dump());
  const auto own = wait_ready(a);
  const json billing = take_lease(a, "holder=billing-1&duration_ms=1500");
  const json sony = take_lease(a, "holder=sony-1&pool=sony&duration_ms=1500");

  const auto listed = lease_cli(a, {"list", "--json"});
  INFO(listed.out << listed.err);
  REQUIRE(listed.status.code == 0);
  const json leases = json::parse(listed.out);
  REQUIRE(leases.size() == 2);
  CHECK(leases[0]["pool"] == "cluster");
  CHECK(leases[0]["worker_id"] == billing["worker_id"]);
  CHECK(leases[0]["holder"] == "billing-1");
  CHECK(leases[0]["fence_ms"] == billing["max_timestamp_ms"]);
  CHECK(leases[1]["pool"] == "sony");
  CHECK(leases[1]["holder"] == "sony-1");
  const auto table = lease_cli(a, {"list"});
  CHECK_THAT(table.out, Catch::Contains("billing-1") && Catch::Contains("sony-1"));

  const auto id = billing["worker_id"].get<std::uint32_t>();
  const auto forgot = lease_cli(a, {"forget", std::to_string(id)});
  INFO(forgot.out << forgot.err);
  REQUIRE(forgot.status.code == 0);
  CHECK_THAT(forgot.out,
             Catch::Contains(std::to_string(billing["max_timestamp_ms"].get<std::int64_t>())));
  {
    auto s = connect(zk);
    const auto free = s->get(fmt::format("{}/pool/notuse/{}", kE2eRoot, id)).value();
    CHECK(coord::decode_notuse(free.data)->floor ==
          billing["max_timestamp_ms"].get<std::int64_t>());
  }
  const auto renewed = ask_lease(
      a, "PUT", fmt::format("/v1/leases/{}?token={}", id, billing["token"].get<std::string>()));
  REQUIRE(renewed);
  CHECK(renewed->status == 410);
  // Nothing there now, a daemon's own, a worker ID of no pool: refused.
  CHECK(lease_cli(a, {"forget", std::to_string(id)}).status.code == 3);
  CHECK(lease_cli(a, {"forget", std::to_string(own)}).status.code == 3);
  CHECK(lease_cli(a, {"forget", "1", "--pool", "nosuch"}).status.code == 1);
  CHECK(lease_cli(a, {"forget", "x"}).status.code == 2);
  // A named pool's, with --pool.
  CHECK(lease_cli(
            a, {"forget", std::to_string(sony["worker_id"].get<std::uint32_t>()), "--pool", "sony"})
            .status.code == 0);
  CHECK(json::parse(lease_cli(a, {"list", "--json"}).out).empty());
}

TEST_CASE(
    "leases: a 16-bit pool (sonyflake's machine ID) is made by its first take, leases up to worker "
    "ID 65535, then refuses pool_exhausted",
    "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir state;
  json config = pools_config(zk, state, /*new_pools=*/false);
  config["leases"]["pools"] = {{"sonyflake", {{"worker_bits", 16}}}};
  Daemon a(config.dump());
  wait_ready(a);
  // The first take makes the pool's 65,536 nodes (in multis): answered, if
  // not within the answer's wait then at a later ask.
  json first;
  REQUIRE(eventually(
      [&] {
        const auto r = ask_lease(a, "POST", "/v1/leases?holder=first&pool=sonyflake");
        if (!r || r->status != 200) return false;
        first = json::parse(r->body);
        return true;
      },
      60s));
  CHECK(first["worker_bits"] == 16);
  // Every free worker ID but the highest taken by holders of long leases,
  // written straight into ZooKeeper as a take writes them. The free ones are
  // read, not assumed: a first ask that outwaited its answer (the fill is
  // slow on a loaded host) still took a worker ID, left to the reaper.
  auto admin = connect(zk);
  const std::string pool = pool_node("sonyflake") + "/pool";
  auto names = admin->children(pool + "/notuse");
  REQUIRE(names);
  std::vector<std::uint32_t> free;
  for (const auto& name : names.value())
    free.push_back(static_cast<std::uint32_t>(std::stoul(name)));
  std::sort(free.begin(), free.end());
  REQUIRE(free.size() > 65000);
  const std::uint32_t last_free = free.back();
  CHECK(last_free >= 65534);  // the top is reached: only a first take could hold 65535
  free.pop_back();
  coord::InuseData held;
  held.owner = {"filler", 0, 0, "lease:filler"};
  held.ts = test::wall_ms_now();
  held.lease_ms = 600'000;
  const std::string data = coord::encode(held);
  std::vector<coord::ZkOp> batch;
  for (std::size_t i = 0; i < free.size(); ++i) {
    batch.push_back(coord::ZkOp::remove(fmt::format("{}/notuse/{}", pool, free[i]), -1));
    batch.push_back(coord::ZkOp::create(fmt::format("{}/inuse/{}", pool, free[i]), data));
    if (batch.size() >= 1000 || i + 1 == free.size()) {
      auto done = admin->multi(batch);
      INFO((done ? std::string("ok") : done.error().message()));
      REQUIRE(done);
      batch.clear();
    }
  }
  const json top = take_lease(a, "holder=top&pool=sonyflake");
  CHECK(top["worker_id"] == last_free);
  CHECK(refused(a, "holder=none&pool=sonyflake") ==
        std::pair<unsigned, std::string>{503, "pool_exhausted"});
  // The one at the top renews and gives back as any other.
  const std::string one = fmt::format("/v1/leases/{}?pool=sonyflake&token={}", last_free,
                                      top["token"].get<std::string>());
  CHECK(ask_lease(a, "PUT", one)->status == 200);
  CHECK(ask_lease(a, "DELETE", one)->status == 200);
  stop(a);
}
