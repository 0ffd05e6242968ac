// The nemesis's plan: replayable from its seed, within its bounds, and
// without faults that would cancel each other out.

#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "../chaos/nemesis.hpp"

using namespace snowflake::chaos;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> described(const std::vector<PlannedFault>& plan) {
  std::vector<std::string> out;
  for (const auto& f : plan) out.push_back(std::to_string(f.at_ms) + " " + f.describe());
  return out;
}

std::string fault_class(const std::string& kind) {
  if (kind == "kill" || kind == "pause" || kind == "term") return "process";
  if (kind == "seq_lose_reply") return "net";
  return kind.substr(0, kind.find('_'));
}

// Faults of the whole cluster, not of one daemon: a migration floor, a
// sequence's raise (its target says which sequence).
bool cluster_wide(const PlannedFault& f) {
  return f.kind == "floor_raise" || f.kind == "seq_raise";
}

}  // namespace

TEST_CASE("nemesis: the same seed gives the same plan, another seed another", "[nemesis]") {
  const NemesisOptions a{.seed = 7, .length = 120s, .daemons = 4};
  CHECK(described(plan_faults(a)) == described(plan_faults(a)));
  NemesisOptions b = a;
  b.seed = 8;
  CHECK(described(plan_faults(a)) != described(plan_faults(b)));
}

TEST_CASE("nemesis: bounded, and quiet at the end", "[nemesis]") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const NemesisOptions o{.seed = seed, .length = 60s, .daemons = 5, .ensemble = seed % 2 == 0};
    const auto plan = plan_faults(o);
    CHECK(plan.size() > 10);
    const auto quiet_from = (o.length - quiet_period(o.length)).count();
    for (const auto& f : plan) {
      INFO(f.describe());
      CHECK(f.at_ms >= 0);
      CHECK(f.at_ms + f.duration_ms <= quiet_from);
      if (f.kind.starts_with("zk_")) {
        CHECK(f.target >= (o.ensemble ? -1 : 0));
        CHECK(f.target <= (o.ensemble ? 2 : 0));
      } else if (f.kind == "floor_raise") {
        CHECK(f.target == -1);
        CHECK(f.duration_ms > 0);
      } else if (f.kind == "seq_raise") {
        CHECK(f.target >= 0);  // which of the load's sequences
        CHECK(f.target < 2);
        CHECK(f.duration_ms > 0);
      } else {
        CHECK(f.target >= 0);
        CHECK(f.target < o.daemons);
      }
    }
  }
}

TEST_CASE(
    "nemesis: no process fault overlaps another fault of its daemon, one ZooKeeper fault at a time",
    "[nemesis]") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto plan = plan_faults({.seed = seed, .length = 300s, .daemons = 4, .ensemble = true});
    for (std::size_t i = 0; i < plan.size(); ++i) {
      for (std::size_t j = i + 1; j < plan.size(); ++j) {
        const auto& a = plan[i];
        const auto& b = plan[j];
        const bool overlap = a.at_ms < b.at_ms + std::max<std::int64_t>(b.duration_ms, 1) &&
                             b.at_ms < a.at_ms + std::max<std::int64_t>(a.duration_ms, 1);
        if (!overlap) continue;
        INFO(a.describe() << " / " << b.describe());
        const bool zk_a = a.kind.starts_with("zk_"), zk_b = b.kind.starts_with("zk_");
        if (zk_a && zk_b) FAIL("two ZooKeeper faults at once");
        const bool floor_a = a.kind == "floor_raise", floor_b = b.kind == "floor_raise";
        if (floor_a && floor_b) FAIL("two floors raised at once");
        if (a.kind == "seq_raise" && b.kind == "seq_raise") FAIL("two sequences raised at once");
        if (zk_a || zk_b || cluster_wide(a) || cluster_wide(b) || a.target != b.target) continue;
        CHECK(fault_class(a.kind) != "process");
        CHECK(fault_class(b.kind) != "process");
        CHECK(fault_class(a.kind) != fault_class(b.kind));
      }
    }
  }
}

TEST_CASE("nemesis: a long plan holds every kind, disk_full only where it can be done",
          "[nemesis]") {
  std::set<std::string> kinds;
  bool stalled_and_jumped = false;
  const auto plan =
      plan_faults({.seed = 3, .length = 30min, .daemons = 4, .ensemble = true, .holders = 2});
  for (const auto& f : plan) kinds.insert(f.kind);
  for (std::size_t i = 0; i + 1 < plan.size(); ++i) {
    for (std::size_t j = i + 1;
         j < plan.size() && plan[j].at_ms <= plan[i].at_ms + plan[i].duration_ms; ++j) {
      if (plan[i].kind == "net_stall" && plan[j].kind == "clock_step" &&
          plan[i].target == plan[j].target) {
        stalled_and_jumped = true;
      }
    }
  }
  for (const auto& k : fault_kinds()) {
    INFO(k);
    CHECK(kinds.contains(k));
  }
  CHECK(stalled_and_jumped);  // cut off, and the clock jumps meanwhile
  for (const auto& f :
       plan_faults({.seed = 3, .length = 30min, .daemons = 4, .disk_full = false})) {
    CHECK(f.kind != "disk_full");
  }
}

TEST_CASE("nemesis: only the kinds asked for, as far apart as asked", "[nemesis]") {
  const auto kills = plan_faults(
      {.seed = 5, .length = 10min, .daemons = 16, .only_kinds = {"kill"}, .mean_gap_ms = 30'000});
  REQUIRE(kills.size() >= 5);  // about 570 s / 30 s of draws
  CHECK(kills.size() <= 40);
  for (const auto& f : kills) CHECK(f.kind == "kill");
  const auto every_kind = plan_faults({.seed = 5, .length = 10min, .daemons = 16});
  CHECK(every_kind.size() > 5 * kills.size());  // 1.2 s apart by default

  // A composite kind brings its parts; a kind that cannot be planned here, nothing.
  for (const auto& f :
       plan_faults({.seed = 5, .length = 5min, .daemons = 4, .only_kinds = {"cut_off_and_jump"}})) {
    CHECK((f.kind == "net_stall" || f.kind == "clock_step"));
  }
  CHECK(plan_faults({.seed = 5,
                     .length = 5min,
                     .daemons = 4,
                     .disk_full = false,
                     .only_kinds = {"disk_full"}})
            .empty());
}

TEST_CASE(
    "nemesis: holder faults only with holders, each on a holder, one holder's never overlapping",
    "[nemesis]") {
  for (const auto& f : plan_faults({.seed = 7, .length = 10min, .daemons = 4})) {
    CHECK_FALSE(f.kind.starts_with("holder_"));
  }
  std::map<int, std::int64_t> busy_until;
  int drawn = 0;
  for (const auto& f : plan_faults({.seed = 7, .length = 10min, .daemons = 4, .holders = 2})) {
    if (!f.kind.starts_with("holder_")) continue;
    ++drawn;
    INFO(f.describe());
    CHECK((f.target == 0 || f.target == 1));
    CHECK(f.duration_ms > 0);
    CHECK(f.at_ms >= busy_until[f.target]);
    busy_until[f.target] = f.at_ms + f.duration_ms;
  }
  CHECK(drawn >= 20);
}
