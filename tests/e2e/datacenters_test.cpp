// Many datacenters: each runs its own ZooKeeper and its own worker-ID pool,
// and the datacenter field keeps their IDs apart. Two real ZooKeeper servers
// stand for two datacenters, with the same pool, so both hand out the same
// worker IDs.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/id_load.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "snowflake/ids/layout.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// 2 datacenter bits, a pool of 2 worker IDs: two daemons take both.
const json kLayout = {
    {"time_bits", 41}, {"datacenter_bits", 2}, {"worker_bits", 1}, {"sequence_bits", 19}};

json datacenter_config(const ZooKeeperServer& zk, const std::filesystem::path& state,
                       int datacenter) {
  return cluster_config(zk.hosts(), "recycle", state,
                        {{"layout", kLayout}, {"coordinator", {{"datacenter_id", datacenter}}}});
}

struct Site {
  explicit Site(int id) : datacenter(id) {
    for (int i = 0; i < 2; ++i) {
      daemons.push_back(
          std::make_unique<Daemon>(datacenter_config(zk, states[i].path(), id).dump()));
    }
  }
  int datacenter;
  ZooKeeperServer zk;
  TempDir states[2];
  std::vector<std::unique_ptr<Daemon>> daemons;
};

}  // namespace

TEST_CASE(
    "datacenters: two ensembles hand out the same worker IDs, the datacenter field keeps "
    "every ID apart",
    "[coord][datacenter][uniqueness]") {
  Site a(1);
  Site b(2);
  std::map<Daemon*, std::pair<int, std::uint32_t>> owner;  // daemon -> (datacenter, worker)
  for (Site* site : {&a, &b}) {
    std::set<std::uint32_t> workers;
    for (auto& d : site->daemons) {
      const auto worker = wait_ready(*d);
      workers.insert(worker);
      owner[d.get()] = {site->datacenter, worker};
    }
    CHECK(workers == std::set<std::uint32_t>{0, 1});  // both pools hand out both IDs
  }

  // All four loaded together.
  std::vector<std::unique_ptr<IdLoad>> loads;
  std::vector<Daemon*> loaded;
  for (Site* site : {&a, &b}) {
    for (auto& d : site->daemons) {
      loads.push_back(std::make_unique<IdLoad>(d->port(), 500));
      loaded.push_back(d.get());
    }
  }
  CHECK(eventually(
      [&] {
        return std::all_of(loads.begin(), loads.end(),
                           [](const auto& l) { return l->issued() >= 50'000; });
      },
      60s));
  for (auto& l : loads) l->stop();

  const IdLayout layout =
      IdLayout::create(
          {.time_bits = 41, .datacenter_bits = 2, .worker_bits = 1, .sequence_bits = 19},
          kDefaultEpochMs)
          .value();
  std::vector<std::uint64_t> all;
  std::size_t misplaced = 0;
  for (std::size_t i = 0; i < loads.size(); ++i) {
    const auto [datacenter, worker] = owner[loaded[i]];
    for (const std::uint64_t id : loads[i]->ids()) {
      const auto d = layout.decompose(id).value();
      if (d.datacenter_id != static_cast<std::uint32_t>(datacenter) || d.worker_id != worker)
        ++misplaced;
    }
    all.insert(all.end(), loads[i]->ids().begin(), loads[i]->ids().end());
  }
  INFO(all.size() << " IDs from 4 daemons in 2 datacenters");
  CHECK(all.size() >= 200'000);
  CHECK(duplicates(all) == 0);
  CHECK(misplaced == 0);

  // /decode, /status and the info metric say the datacenter.
  Daemon& first = *a.daemons[0];
  const auto decoded = json::parse(
      http_get(first.port(), "/decode/" + std::to_string(loads[2]->ids().front()))->body);
  CHECK(decoded["datacenter_id"] == 2);
  const auto status = json::parse(http_get(first.port(), "/status")->body);
  CHECK(status["datacenter_id"] == 1);
  CHECK(status["layout"]["datacenter_bits"] == 2);
  CHECK_THAT(http_get(first.port(), "/metrics")->body, Catch::Contains("datacenter_id=\"1\""));
  // pool status names the datacenter its root records.
  const auto pool = run_process(
      {SNOWFLAKED_PATH, "pool", "status", "--config", first.config_path().string(), "--json"});
  REQUIRE(pool.status.code == 0);
  CHECK(json::parse(pool.out)["datacenter_id"] == 1);
  const auto pool_text =
      run_process({SNOWFLAKED_PATH, "pool", "status", "--config", first.config_path().string()});
  CHECK_THAT(pool_text.out, Catch::Contains("(datacenter 1)"));
  // The CLI decodes with the config's layout too.
  const auto cli = run_process({SNOWFLAKED_PATH, "decode", std::to_string(loads[3]->ids().back()),
                                "--config", first.config_path().string()});
  REQUIRE(cli.status.code == 0);
  CHECK(json::parse(cli.out)["datacenter_id"] == 2);
}

TEST_CASE("datacenters: a daemon of another datacenter on a datacenter's root exits 3 naming both",
          "[coord][datacenter]") {
  ZooKeeperServer zk;
  TempDir s1;
  TempDir s2;
  Daemon first(datacenter_config(zk, s1.path(), 1).dump());
  wait_ready(first);
  Daemon stray(datacenter_config(zk, s2.path(), 3).dump());
  const auto status = stray.process().wait_for_exit(20s);
  REQUIRE(status);
  CHECK(status->code == 3);
  CHECK_THAT(stray.process().stderr_text(),
             Catch::Contains("belongs to datacenter 1") && Catch::Contains("datacenter_id is 3"));
  CHECK(ready(first));
}
