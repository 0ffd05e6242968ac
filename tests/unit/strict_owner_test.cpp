// Strict sequences without ZooKeeper: the owner record's text, the
// rendezvous ranking that spreads tags over the daemons, the node's order
// field and its take refusal, and the lease's runs that fence an owner
// (sequence_store/strict_owner.hpp, sequences/strict_gate.hpp).

#include <catch2/catch.hpp>

#include <map>

#include "../support/manual_clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/sequences/strict_gate.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace std::chrono_literals;

TEST_CASE("a strict owner record is read back as written, and a broken one is refused",
          "[strict]") {
  const StrictOwner o{7, "/r/pool/inuse/7", "run-abc", "10.0.0.5:8080", false};
  CHECK(decode_strict_owner(encode(o)) == o);
  StrictOwner none;
  none.released = true;
  CHECK(decode_strict_owner(encode(none)) == none);
  // Owned needs the node and the run its fence is read from.
  StrictOwner nameless = o;
  nameless.token.clear();
  CHECK_FALSE(decode_strict_owner(encode(nameless)));
  CHECK_FALSE(decode_strict_owner(R"({"worker_id":-1,"node":"n","token":"t","address":"a",)"
                                  R"("released":false})"));
  CHECK_FALSE(decode_strict_owner("[]"));
  CHECK_FALSE(decode_strict_owner(""));
  // Served over TLS: said in the record; a record without it (as daemons
  // before it wrote) is plain HTTP, and one with it not a bool is broken.
  StrictOwner over_tls = o;
  over_tls.tls = true;
  CHECK(decode_strict_owner(encode(over_tls)) == over_tls);
  CHECK(encode(o).find("tls") == std::string::npos);
  CHECK(decode_strict_owner(R"({"worker_id":7,"node":"n","token":"t","address":"a",)"
                            R"("released":false})")
            ->tls == false);
  CHECK_FALSE(decode_strict_owner(R"({"worker_id":7,"node":"n","token":"t","address":"a",)"
                                  R"("released":false,"tls":"yes"})"));
}

TEST_CASE("strict tags are spread over the daemons, and a daemon leaving moves only its own",
          "[strict]") {
  const std::vector<std::uint32_t> ids{0, 1, 2, 3};
  std::map<std::uint32_t, int> firsts;
  std::map<std::string, std::uint32_t> first_of;
  for (int i = 0; i < 400; ++i) {
    const std::string tag = "tag" + std::to_string(i);
    const auto ranked = rank_owners(tag, ids);
    REQUIRE(ranked.size() == 4);
    // The same from any order of the same IDs (every daemon ranks alike).
    CHECK(rank_owners(tag, {3, 1, 0, 2, 1}) == ranked);
    ++firsts[ranked[0]];
    first_of[tag] = ranked[0];
  }
  for (const auto id : ids) {
    CHECK(firsts[id] > 60);  // 100 each on average
  }
  // Worker ID 2 gone: only its tags move.
  for (const auto& [tag, first] : first_of) {
    const auto without = rank_owners(tag, {0, 1, 3});
    if (first != 2) CHECK(without[0] == first);
  }
}

TEST_CASE("a strict node keeps its order, and only its owner takes a range of it", "[strict]") {
  SequenceNode n;
  n.strict = true;
  const auto text = encode(n);
  CHECK(text.find(R"("order":"strict")") != std::string::npos);
  CHECK(decode_sequence(text) == n);
  CHECK(encode(SequenceNode{}).find("order") == std::string::npos);  // as older versions wrote
  CHECK_FALSE(decode_sequence(R"({"next":1,"step":1,"floor":0,"takes":[],"order":"any"})"));
  const auto refused = plan_take(n, 3, "run-1", 10);
  CHECK_FALSE(refused.plan);
  CHECK(refused.refusal == TakeRefusal::strict);
  const auto taken = plan_take(n, 3, "run-1", 10, /*strict_owner=*/true);
  REQUIRE(taken.plan);
  CHECK(taken.plan->range.start == 1);
  // Not with a reset (a strict sequence never restarts).
  SequenceNode periodic = n;
  periodic.reset = PeriodReset::daily;
  periodic.time_zone = "UTC";
  CHECK_FALSE(decode_sequence(encode(periodic)));
}

TEST_CASE("a strict gate opens only within the lease run in which the tag was owned", "[strict]") {
  test::ManualClock clock{1'700'000'000'000};
  Lease lease{clock};
  StrictGate gate;
  const auto first_run = lease.generation();
  lease.extend_until(clock.monotonic() + 1s);
  const auto run = lease.generation();
  CHECK(run != first_run);  // granted: a new run
  gate.own(run);
  CHECK(gate.open(lease));
  lease.extend_until(clock.monotonic() + 2s);  // extended in time: the same run
  CHECK(lease.generation() == run);
  CHECK(gate.open(lease));
  clock.advance(3s);  // run out
  CHECK_FALSE(gate.open(lease));
  lease.extend_until(clock.monotonic() + 1s);  // granted again: a takeover may have landed
  CHECK(lease.generation() != run);
  CHECK_FALSE(gate.open(lease));
  gate.own(lease.generation());  // the record read again, as ours
  CHECK(gate.open(lease));
  lease.revoke();
  CHECK_FALSE(gate.open(lease));
  gate.disown();
  lease.extend_until(clock.monotonic() + 1s);
  CHECK_FALSE(gate.open(lease));
}
