// The migration floor against a real ZooKeeper server: recorded in the
// cluster root, confirmed by owners' sessions, and what `snowflaked pool
// floor` waits for (migration_floor.hpp); a Leaf cluster's nodes read as Leaf
// writes them (leaf_import.hpp).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/id_fields.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/migration/leaf_import.hpp"
#include "snowflake/migration/raise_floor.hpp"
#include "snowflake/workers/recycle_pool.hpp"
#include "snowflake/zk/node_data.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::migration;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kFloorRoot = "/snowflake/floor";
constexpr std::int64_t kFloorMs = 1'800'000'000'000;
constexpr auto kLease = 1500ms;

std::vector<UnconfirmedOwner> pending(ZkSession& s, CoordinatorType strategy) {
  return unconfirmed_owners(s, kFloorRoot, strategy, kFloorMs, kLease, 0ms).value();
}

}  // namespace

TEST_CASE("cluster floor: recorded in the root beside the layout, and it only rises", "[floor]") {
  ZooKeeperServer zk;
  auto s = connect_session(zk.hosts());
  REQUIRE(check_cluster_root(*s, kFloorRoot, LayoutSettings{}, CoordinatorType::recycle, 0));
  CHECK_FALSE(recorded_floor(s->get(kFloorRoot).value().data));
  CHECK(raise_migration_floor(*s, kFloorRoot, {100, 5000}).value() == MigrationFloor{100, 5000});
  CHECK(raise_migration_floor(*s, kFloorRoot, {50, 4000}).value() == MigrationFloor{100, 5000});
  CHECK(raise_migration_floor(*s, kFloorRoot, {200, 6000}).value() == MigrationFloor{200, 6000});
  CHECK(recorded_floor(s->get(kFloorRoot).value().data) == MigrationFloor{200, 6000});
  // The layout and strategy are still there: the root check still passes,
  // and still refuses another strategy.
  CHECK(check_cluster_root(*s, kFloorRoot, LayoutSettings{}, CoordinatorType::recycle, 0));
  CHECK_FALSE(check_cluster_root(*s, kFloorRoot, LayoutSettings{}, CoordinatorType::sequential, 0));
  // A root recorded before strategies (0.1: the layout alone) gains ours and keeps the floor.
  REQUIRE(s->set(kFloorRoot, with_floor(encode_layout(LayoutSettings{}), {300, 7000}), -1));
  REQUIRE(check_cluster_root(*s, kFloorRoot, LayoutSettings{}, CoordinatorType::recycle, 0));
  CHECK(recorded_floor(s->get(kFloorRoot).value().data) == MigrationFloor{300, 7000});
  CHECK_FALSE(check_cluster_root(*s, kFloorRoot, LayoutSettings{}, CoordinatorType::sequential, 0));
}

TEST_CASE(
    "pool floor waits for a live owner until its session confirms, and for a cut-off one "
    "until its lease has run out",
    "[floor]") {
  ZooKeeperServer zk;
  auto admin = connect_session(zk.hosts());
  REQUIRE(check_cluster_root(*admin, kFloorRoot, LayoutSettings{}, CoordinatorType::recycle, 0));
  RecyclePool pool(kFloorRoot, 1);
  REQUIRE(pool.ensure(*admin, 5s));
  auto owner = connect_session(zk.hosts());
  const InuseData data{OwnerToken::fresh("owner", 8080), 0, wall_ms_now(), 0, kLease.count()};
  const auto claimed = pool.claim(*owner, data, INT64_MAX);
  REQUIRE(claimed);
  const auto worker = claimed.value().worker_id;

  auto p = pending(*admin, CoordinatorType::recycle);
  REQUIRE(p.size() == 1);
  CHECK(p[0].worker_id == worker);
  CHECK_THAT(p[0].why, Catch::Contains("has not confirmed"));
  // A confirmation of a lower floor does not count.
  REQUIRE(confirm_floor(*owner, kFloorRoot, kFloorMs - 1, worker));
  CHECK(pending(*admin, CoordinatorType::recycle).size() == 1);
  REQUIRE(confirm_floor(*owner, kFloorRoot, kFloorMs, worker));
  CHECK(pending(*admin, CoordinatorType::recycle).empty());

  // Its session ends (its alive node and confirmation go), its inuse node
  // stays: cut off, it may issue until its last write + its lease.
  owner.reset();
  p = pending(*admin, CoordinatorType::recycle);
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0].why, Catch::Contains("cut off"));
  const auto waited = std::chrono::steady_clock::now();
  REQUIRE(eventually([&] { return pending(*admin, CoordinatorType::recycle).empty(); }, 10s));
  CHECK(std::chrono::steady_clock::now() - waited < kLease + 1s);
}

TEST_CASE(
    "pool floor and a sequential node of 0.1 (no owner, no lease): the configured lease "
    "stands in, so a node long unwritten holds nothing up",
    "[floor]") {
  ZooKeeperServer zk;
  auto admin = connect_session(zk.hosts());
  REQUIRE(check_cluster_root(*admin, kFloorRoot, LayoutSettings{}, CoordinatorType::sequential, 0));
  REQUIRE(admin->ensure_path(kFloorRoot + "/forever"));
  REQUIRE(admin->create(
      kFloorRoot + "/forever/web-0:8080-0000000000",
      json{{"host", "web-0"}, {"port", 8080}, {"ts", wall_ms_now()}, {"hwm", wall_ms_now()}}
          .dump()));
  // Just written: its writer (a 0.1 daemon, which never confirms) may issue.
  REQUIRE(pending(*admin, CoordinatorType::sequential).size() == 1);
  REQUIRE(eventually([&] { return pending(*admin, CoordinatorType::sequential).empty(); },
                     kLease + 5s));
}

TEST_CASE(
    "a Leaf cluster read as Leaf writes it: the newest report + 3 s + the margin, in Leaf's layout",
    "[floor][leaf]") {
  ZooKeeperServer zk;
  auto s = connect_session(zk.hosts());
  CHECK_THAT(read_leaf_cluster(*s, "/snowflake/leaf", 500).error().message,
             Catch::Contains("/snowflake/leaf/forever does not exist"));
  REQUIRE(s->ensure_path("/snowflake/leaf/forever"));
  CHECK_THAT(read_leaf_cluster(*s, "/snowflake/leaf", 500).error().message,
             Catch::Contains("no Leaf server"));
  const std::int64_t newest = 1'795'000'000'000;
  REQUIRE(
      s->create("/snowflake/leaf/forever/10.0.0.1:8080-0000000000",
                json{{"ip", "10.0.0.1"}, {"port", "8080"}, {"timestamp", newest - 5000}}.dump()));
  REQUIRE(s->create("/snowflake/leaf/forever/10.0.0.2:8080-0000000001",
                    json{{"ip", "10.0.0.2"}, {"port", "8080"}, {"timestamp", newest}}.dump()));
  const auto leaf = read_leaf_cluster(*s, "/snowflake/leaf", 500);
  REQUIRE(leaf);
  CHECK(leaf.value().servers.size() == 2);
  CHECK(leaf.value().newest_report_ms == newest);
  CHECK(leaf.value().issued_until_ms == newest + 3000 + 500);
  // (ms - twepoch) << 22 | workerId << 12 | sequence, both at their largest.
  CHECK(leaf.value().largest_id == leaf_largest_id_at(newest + 3500));
  // A node that is not a Leaf server's report: no floor can be proven.
  REQUIRE(s->create("/snowflake/leaf/forever/10.0.0.3:8080-0000000002", "junk"));
  CHECK_THAT(read_leaf_cluster(*s, "/snowflake/leaf", 500).error().message,
             Catch::Contains("not a Leaf server's report"));
}
