// The cluster's identity and fence in the root's data
// (cluster/cluster_identity.hpp), and how a daemon keeps what it knows of the
// cluster's history (cluster/cluster_history.hpp): pure, no ZooKeeper.
#include <catch2/catch.hpp>

#include <set>

#include "snowflake/cluster/cluster_history.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/migration_floor.hpp"

using namespace snowflake;
using namespace snowflake::coord;

TEST_CASE("cluster identity: an ID is 128 random bits in hex, and only that shape is read",
          "[lost_data]") {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const auto id = new_cluster_id();
    CHECK(is_cluster_id(id));
    ids.insert(id);
  }
  CHECK(ids.size() == 1000);
  CHECK_FALSE(is_cluster_id(""));
  CHECK_FALSE(is_cluster_id("0123456789ABCDEF0123456789abcdef"));  // upper case
  CHECK_FALSE(is_cluster_id("0123456789abcdef0123456789abcde"));   // 31 digits
  const std::string root = R"({"time_bits":41,"strategy":"recycle"})";
  CHECK_FALSE(recorded_cluster_id(root));
  CHECK_FALSE(recorded_cluster_id(""));
  CHECK_FALSE(recorded_cluster_id(R"({"cluster_id":"not hex"})"));
  CHECK_FALSE(recorded_cluster_id(R"({"cluster_id":12})"));
  const auto id = new_cluster_id();
  const auto with = with_cluster_id(root, id);
  CHECK(recorded_cluster_id(with) == id);
  CHECK(with.find("\"strategy\":\"recycle\"") != std::string::npos);  // the rest kept
}

TEST_CASE(
    "cluster identity: a fence is written beside the other fields, read back, and a loss's "
    "fence is never replaced by a new cluster's",
    "[lost_data]") {
  const std::string root =
      with_floor(R"({"strategy":"recycle"})", MigrationFloor{123456789, 1'700'000'000'000});
  const ClusterFence lost{1'800'000'000'000, FenceKind::history_lost, 1'799'999'000'000,
                          "ZooKeeper lost or rolled back the cluster's history"};
  const auto fenced = with_fence(root, lost);
  REQUIRE(recorded_fence(fenced) == lost);
  CHECK(recorded_floor(fenced) == recorded_floor(root));  // the migration floor kept
  CHECK_FALSE(recorded_fence(without_fence(fenced)));
  CHECK(recorded_floor(without_fence(fenced)) == recorded_floor(root));
  CHECK_FALSE(recorded_fence(root));
  // Unreadable fences are none (an operator's edit): never a crash, never a guess.
  CHECK_FALSE(recorded_fence(R"({"fence":{"until_ms":"soon","kind":"history_lost","at_ms":1}})"));
  CHECK_FALSE(recorded_fence(R"({"fence":{"until_ms":1e300,"kind":"history_lost","at_ms":1}})"));
  CHECK_FALSE(recorded_fence(R"({"fence":{"until_ms":5,"kind":"other","at_ms":1}})"));
  CHECK_FALSE(recorded_fence(R"({"fence":[1,2]})"));

  const ClusterFence fresh{1'900'000'000'000, FenceKind::new_cluster, 1'800'000'000'000, "new"};
  const auto both = combined(lost, fresh);
  CHECK(both.kind == FenceKind::history_lost);
  CHECK(both.until_ms == 1'900'000'000'000);  // the later end
  CHECK(both.reason == lost.reason);
  CHECK(combined(fresh, lost) == both);
  const ClusterFence later{2'000'000'000'000, FenceKind::history_lost, 1, "later"};
  CHECK(combined(lost, later) == later);
  CHECK(combined(later, lost) == later);
}

TEST_CASE("cluster identity: a fence lasts every lease of before, the clocks' skew and the margin",
          "[lost_data]") {
  CoordinatorSettings s;
  s.lease_timeout = std::chrono::milliseconds(540'000);
  s.safety_margin = std::chrono::milliseconds(60'000);
  s.max_skew = std::chrono::milliseconds(2'000);
  CHECK(fence_length(s) == std::chrono::milliseconds(602'000));
}

TEST_CASE(
    "cluster history: a write answered from a history behind ours is a loss, the first report "
    "of an episode stops the daemon, later ones only add to the log",
    "[lost_data]") {
  CHECK(ClusterHistory::follows(0, 5));  // nothing seen yet
  CHECK(ClusterHistory::follows(0x100, 0x101));
  CHECK_FALSE(ClusterHistory::follows(0x100, 0x100));
  CHECK_FALSE(ClusterHistory::follows(0x1'0000'00fc, 0x1'0000'0037));

  std::vector<std::string> persisted;
  ClusterHistory h(std::nullopt, [&](const std::string& id) { persisted.push_back(id); });
  int stops = 0;
  h.on_report([&] { ++stops; });
  CHECK_FALSE(h.known_id());
  h.learn("aa");
  h.learn("aa");  // known already: not written again
  CHECK(persisted == std::vector<std::string>{"aa"});
  h.saw(0x50);
  h.saw(0x40);
  CHECK(h.highest_zxid() == 0x50);

  CHECK(h.report(HistoryLoss::rolled_back, "first", 1000));
  CHECK_FALSE(h.report(HistoryLoss::wiped, "second", 1001));
  CHECK(stops == 1);
  CHECK(h.open());
  CHECK(h.episodes() == 1);
  REQUIRE(h.last_loss());
  CHECK(h.last_loss()->detail == "first");
  // What was seen before the loss says nothing of the history after it.
  CHECK(h.highest_zxid() == 0);
  h.settle();
  CHECK_FALSE(h.open());
  CHECK(h.report(HistoryLoss::replaced, "third", 2000));
  CHECK(stops == 2);
  CHECK(h.episodes() == 2);
}
