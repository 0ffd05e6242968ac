// The decisions made on a sequence's node (sequence_store/sequence_node.hpp): what a
// take writes, how a lost reply is decided, what a clean stop gives back.
#include <catch2/catch.hpp>

#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/zk/cluster_tree.hpp"

#include <nlohmann/json.hpp>

using namespace snowflake::coord;

namespace {

SequenceNode node_at(std::int64_t next, std::vector<SequenceTake> takes = {}) {
  return SequenceNode{next, 1000, 0, std::move(takes)};
}

}  // namespace

TEST_CASE("sequence node: a take writes the next range and remembers its nonce", "[sequence]") {
  const auto out = plan_take(node_at(5000), 7, "run-1", 1000);
  REQUIRE(out.plan);
  CHECK(out.plan->range == SequenceTake{"run-1", 5000, 6000});
  CHECK(out.plan->after.next == 6000);
  CHECK(out.plan->after.takes == std::vector<SequenceTake>{{"run-1", 5000, 6000}});
  REQUIRE(decode_sequence(encode(out.plan->after)) == out.plan->after);
}

TEST_CASE("sequence node: a version of -1 is never written with (ZooKeeper reads it as any)",
          "[sequence]") {
  CHECK(plan_take(node_at(5000), -1, "run-1", 10).refusal == TakeRefusal::version_wrapped);
  // The versions around it are ordinary versions.
  CHECK(plan_take(node_at(5000), -2, "run-1", 10).plan);
  CHECK(plan_take(node_at(5000), INT32_MIN, "run-1", 10).plan);
  CHECK(plan_take(node_at(5000), INT32_MAX, "run-1", 10).plan);
}

TEST_CASE("sequence node: a floor moves the next take above it, and the top is not passed",
          "[sequence]") {
  auto n = raised(node_at(100), 9999);
  CHECK(n.next == 10000);
  CHECK(raised(n, 50).floor == 9999);  // it only rises
  const auto out = plan_take(SequenceNode{100, 1, 500, {}}, 0, "r-1", 10);
  REQUIRE(out.plan);
  CHECK(out.plan->range.start == 501);
  const auto top = plan_take(node_at(kSequenceMax - 5), 0, "r-1", 100);
  REQUIRE(top.plan);
  CHECK(top.plan->range.end == kSequenceMax);
  CHECK(plan_take(node_at(kSequenceMax), 0, "r-1", 1).refusal == TakeRefusal::exhausted);
}

TEST_CASE("sequence node: exhausted at the top, or raised to it (a tag retired)", "[sequence]") {
  CHECK_FALSE(is_exhausted(node_at(kSequenceMax - 1)));
  CHECK(is_exhausted(node_at(kSequenceMax)));
  // Retiring: seq raise --above 9223372036854775807.
  const auto retired = raised(node_at(100), INT64_MAX);
  CHECK(retired.floor == INT64_MAX);
  CHECK(retired.next == 100);  // not moved past the top
  CHECK(is_exhausted(retired));
  CHECK(plan_take(retired, 0, "r-1", 1).refusal == TakeRefusal::exhausted);
  // A floor one below the top leaves nothing either: ranges end at kSequenceMax.
  CHECK(is_exhausted(raised(node_at(100), kSequenceMax - 1)));
  const auto last = raised(node_at(100), kSequenceMax - 2);
  CHECK_FALSE(is_exhausted(last));
  const auto take = plan_take(last, 0, "r-1", 1000);
  REQUIRE(take.plan);
  CHECK(take.plan->range == SequenceTake{"r-1", kSequenceMax - 1, kSequenceMax});
  CHECK(is_exhausted(take.plan->after));
  CHECK(freeze(node_at(100), INT64_MAX).floor == INT64_MAX);
}

TEST_CASE("sequence node: a lost reply is decided by the attempt's nonce, not by equal data",
          "[sequence]") {
  // Two daemons read the same node and plan the same range: only the nonce
  // tells whose write was applied.
  const auto base = node_at(5000);
  const auto mine = plan_take(base, 3, "a-1", 1000).plan.value();
  const auto theirs = plan_take(base, 3, "b-1", 1000).plan.value();
  CHECK(mine.range.start == theirs.range.start);
  CHECK(find_take(theirs.after, "a-1") == std::nullopt);
  CHECK(find_take(mine.after, "a-1") == mine.range);
  // A later attempt of the same daemon is another nonce.
  CHECK(find_take(mine.after, "a-2") == std::nullopt);
  // After more takes than the node keeps, the range is no longer known.
  SequenceNode n = mine.after;
  for (int i = 0; i < static_cast<int>(kSequenceTakesKept); ++i) {
    n = plan_take(n, i, "b-" + std::to_string(i + 2), 10).plan.value().after;
  }
  CHECK(n.takes.size() == kSequenceTakesKept);
  CHECK(find_take(n, "a-1") == std::nullopt);
}

TEST_CASE("sequence node: a clean stop gives back only what adjoins the newest takes, all ours",
          "[sequence]") {
  // Ours: [5000, 6000) then [6000, 8000): give back from 5500.
  const auto n = node_at(8000, {{"b-1", 4000, 5000}, {"a-1", 5000, 6000}, {"a-2", 6000, 8000}});
  const auto back = plan_give_back(n, "a", 5500);
  REQUIRE(back);
  CHECK(back->next == 5500);
  CHECK(back->takes == std::vector<SequenceTake>{{"b-1", 4000, 5000}, {"a-1", 5000, 5500}});
  REQUIRE(decode_sequence(encode(*back)));
  // Nothing used of the newest: from its start.
  CHECK(plan_give_back(n, "a", 6000)->next == 6000);
  // Someone took after us: nothing goes back.
  const auto later = node_at(9000, {{"a-1", 5000, 6000}, {"b-2", 6000, 9000}});
  CHECK_FALSE(plan_give_back(later, "a", 5500));
  // Someone took between our two: only the newest's rest.
  const auto between =
      node_at(9000, {{"a-1", 5000, 6000}, {"b-2", 6000, 7000}, {"a-2", 7000, 9000}});
  CHECK_FALSE(plan_give_back(between, "a", 5500));
  CHECK(plan_give_back(between, "a", 8000)->next == 8000);
  // A run whose name begins like ours is not ours.
  CHECK_FALSE(plan_give_back(node_at(6000, {{"ab-1", 5000, 6000}}), "a", 5500));
  // Under a raise, the numbers up to the floor stay unused.
  auto raised_node = node_at(6000, {{"a-1", 5000, 6000}});
  raised_node.floor = 5800;
  CHECK(plan_give_back(raised_node, "a", 5500)->next == 5801);
}

TEST_CASE("sequence node: data that does not add up is refused", "[sequence]") {
  CHECK(decode_sequence(R"({"next":5,"step":1,"floor":0,"takes":[]})"));
  CHECK_FALSE(decode_sequence(R"({"next":0,"step":1,"floor":0,"takes":[]})"));
  CHECK_FALSE(decode_sequence(R"({"next":5,"step":0,"floor":0,"takes":[]})"));
  CHECK_FALSE(decode_sequence(
      R"({"next":5,"step":1,"floor":0,"takes":[{"owner":"a-1","start":3,"end":9}]})"));
  CHECK_FALSE(decode_sequence(R"({"next":5.5,"step":1,"floor":0,"takes":[]})"));
  CHECK_FALSE(decode_sequence(R"({"next":5,"step":1,"floor":0})"));
  CHECK_FALSE(decode_sequence("[]"));
}

TEST_CASE(
    "sequence node: a frozen sequence is never taken from or given back to, and a raise thaws it "
    "above what was held",
    "[sequence][lost_data]") {
  const SequenceNode before = node_at(5000, {{"run-1-3", 4000, 5000}});
  const SequenceNode cold = freeze(before, 7999);
  CHECK(cold.frozen);
  CHECK(cold.floor == 7999);  // above what the daemon that froze it held
  CHECK(cold.next == 8000);
  CHECK(freeze(cold, 10).floor == 7999);  // the floor never falls
  CHECK(plan_take(cold, 3, "run-2", 10).refusal == TakeRefusal::frozen);
  CHECK_FALSE(plan_take(cold, 3, "run-2", 10).plan);
  CHECK_FALSE(plan_give_back(freeze(before), "run-1", 4500));
  CHECK(plan_give_back(before, "run-1", 4500));  // the same, thawed
  // Written and read back; a thawed node says nothing of it (as 0.4 wrote).
  CHECK(decode_sequence(encode(cold)) == cold);
  CHECK(encode(before).find("frozen") == std::string::npos);
  CHECK_FALSE(decode_sequence(R"({"next":1,"step":1,"floor":0,"takes":[],"frozen":"yes"})"));
  const SequenceNode warm = raised(cold, 9000);
  CHECK_FALSE(warm.frozen);
  CHECK(warm.next == 9001);
  const auto out = plan_take(warm, 4, "run-2", 10);
  REQUIRE(out.plan);
  CHECK(out.plan->range.start == 9001);
}

TEST_CASE(
    "sequence node: its floor child says the floor and frozen only, and a watch's path names "
    "its tag",
    "[sequence]") {
  SequenceNode n = node_at(5000, {{"run-1", 4000, 5000}});
  CHECK(encode_floor(n) == R"({"floor":0,"frozen":false})");
  // A take changes neither.
  CHECK(encode_floor(plan_take(n, 3, "run-2", 10).plan->after) == encode_floor(n));
  CHECK(encode_floor(freeze(raised(n, 7000))) == R"({"floor":7000,"frozen":true})");

  namespace tree = snowflake::coord::tree;
  CHECK(tree::sequence_floor("/r", "order") == "/r/sequences/order/floor");
  CHECK(tree::sequence_tag_of("/r", "/r/sequences/order") == "order");
  CHECK(tree::sequence_tag_of("/r", "/r/sequences/order/floor") == "order");
  CHECK_FALSE(tree::sequence_tag_of("/r", "/r/sequences"));
  CHECK_FALSE(tree::sequence_tag_of("/r", "/r/sequences/"));
  CHECK_FALSE(tree::sequence_tag_of("/r", "/r/sequences/order/other"));
  CHECK_FALSE(tree::sequence_tag_of("/r", "/r/sequences//floor"));
  CHECK_FALSE(tree::sequence_tag_of("/r", "/r/sequence_holders/run"));
}

TEST_CASE("sequence node: a template and a --max travel with it, and no take passes the max",
          "[sequence][template]") {
  SequenceNode n = node_at(9);
  n.step = 4;
  n.number_template = "ORD-{n:04}";
  n.end = 13;  // --max 12
  REQUIRE(decode_sequence(encode(n)) == n);
  CHECK(encode(n).find("\"max\":12") != std::string::npos);
  CHECK(encode(node_at(9)).find("max") == std::string::npos);  // as older versions wrote it

  const auto first = plan_take(n, 1, "run-1", 100);
  REQUIRE(first.plan);
  CHECK(first.plan->range == SequenceTake{"run-1", 9, 13});
  CHECK(is_exhausted(first.plan->after));
  CHECK(plan_take(first.plan->after, 2, "run-1", 1).refusal == TakeRefusal::exhausted);
  CHECK_FALSE(is_exhausted(n));
  // Raised to its max: retired, like a tag raised to the top.
  CHECK(is_exhausted(raised(n, 12)));

  // What does not add up is refused: a template that does not parse, one
  // with a date but no reset, a max wider than the template prints, or no room.
  auto bad = [&n](const char* change) {
    auto j = nlohmann::json::parse(encode(n));
    j.merge_patch(nlohmann::json::parse(change));
    return decode_sequence(j.dump());
  };
  CHECK(bad(R"({"template": "ORD-{n:04}", "max": 9999})"));
  CHECK_FALSE(bad(R"({"template": "ORD-{q}"})"));
  CHECK_FALSE(bad(R"({"template": "{yyyy}-{n}"})"));
  CHECK_FALSE(bad(R"({"template": "ORD-{n:04}", "max": 10000})"));
  CHECK_FALSE(bad(R"({"template": "", "max": 0})"));
  CHECK_FALSE(bad(R"({"max": 9223372036854775807})"));
  CHECK_FALSE(bad(R"({"template": 7})"));
}

TEST_CASE(
    "sequence node: a definition that restarts each period is never taken from, and what "
    "it holds travels with it",
    "[sequence][period]") {
  SequenceNode d = node_at(1);
  d.reset = snowflake::PeriodReset::daily;
  d.time_zone = "Europe/Berlin";
  d.retention_s = 7 * 86400;
  d.number_template = "INV-{yyyy}{MM}{dd}-{n:06}";
  d.end = 1'000'000;
  REQUIRE(decode_sequence(encode(d)) == d);
  d.removed_through = "2026-11-20";
  REQUIRE(decode_sequence(encode(d)) == d);
  CHECK(plan_take(d, 3, "run-1", 10).refusal == TakeRefusal::periodic);
  CHECK(to_string(TakeRefusal::periodic) == "periodic");

  // A period's first node: the definition's start, step and bound, plain.
  const SequenceNode first = first_of_period(d);
  CHECK(first.next == 1);
  CHECK(first.step == 1000);
  CHECK(first.end == 1'000'000);
  CHECK(first.reset == snowflake::PeriodReset::none);
  CHECK(first.number_template.empty());
  CHECK(period_tag("invoice", "2026-11-26") == "invoice@2026-11-26");

  auto changed = [&d](const char* patch) {
    auto j = nlohmann::json::parse(encode(d));
    j.merge_patch(nlohmann::json::parse(patch));
    return decode_sequence(j.dump());
  };
  CHECK(changed(
      R"({"reset": "monthly", "removed_through": "2026-10", "template": "{yy}{MM}-{n:06}"})"));
  CHECK_FALSE(changed(R"({"reset": "weekly"})"));
  CHECK_FALSE(changed(R"({"reset": "none"})"));
  CHECK_FALSE(changed(R"({"time_zone": "../etc/passwd"})"));
  CHECK_FALSE(changed(R"({"time_zone": null})"));
  CHECK_FALSE(changed(R"({"retention_s": -1})"));
  CHECK_FALSE(changed(R"({"removed_through": "2026-11"})"));     // not a day
  CHECK_FALSE(changed(R"({"removed_through": "2026-02-30"})"));  // not a date
  CHECK_FALSE(changed(R"({"reset": "monthly"})"));               // its daily template names the day
  CHECK_FALSE(changed(R"({"template": "INV-{n:06}"})"));         // two days' numbers alike
  // A reset needs its zone.
  auto j = nlohmann::json::parse(encode(d));
  j.erase("time_zone");
  CHECK_FALSE(decode_sequence(j.dump()));
}

TEST_CASE(
    "sequence node: a period's node is removable only once every clock within the skew "
    "bound has left it, and after its retention",
    "[sequence][period]") {
  snowflake::Period p;
  p.ends_ms = 1'000'000'000;
  // Retention shorter than the skew bound and the margin: the bound decides.
  CHECK(removable_after_ms(p, 0, 5000) == 1'000'000'000 + 5000 + kPeriodRemovalMarginMs);
  CHECK(removable_after_ms(p, 1, 5000) == 1'000'000'000 + 5000 + kPeriodRemovalMarginMs);
  CHECK(removable_after_ms(p, 86400, 5000) == 1'000'000'000 + 86'400'000);
  CHECK(removable_after_ms(p, -5, -5) == 1'000'000'000 + kPeriodRemovalMarginMs);
  // Never: a period that never ends, or waits past the end of time.
  CHECK(removable_after_ms(snowflake::Period{}, 0, 5000) == INT64_MAX);
  CHECK(removable_after_ms(p, INT64_MAX, 5000) == INT64_MAX);
  CHECK(removable_after_ms(p, 0, INT64_MAX) >= INT64_MAX / 2);  // no overflow
}
