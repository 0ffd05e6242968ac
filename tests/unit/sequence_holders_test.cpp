// A holder node's data (coord/sequence_holders.hpp) and what `seq raise`
// reads from it; the state directory's previous run (state/sequence_run.hpp).
#include <catch2/catch.hpp>

#include <fstream>

#include "../support/child_process.hpp"
#include "snowflake/coord/sequence_holders.hpp"
#include "snowflake/state/sequence_run.hpp"

using namespace snowflake;
using namespace snowflake::coord;

TEST_CASE("holder node: encoded and decoded back the same, and data that does not add up refused",
          "[sequence]") {
  const HolderRecord r{"h:80 pid 7",
                       {{"order", {4100, 6000, 0, 1900, 12.5}}, {"invoice", {7, 7, 6, 0, 0}}}};
  CHECK(decode_holder(encode(r)) == r);
  CHECK_FALSE(decode_holder(R"({"owner":"x","tags":{"a":{"from":9,"to":8,"dropped_through":0,)"
                            R"("left":0,"rate":0}}})"));
  CHECK_FALSE(decode_holder(R"({"owner":"x","tags":{"a":{"from":-1,"to":8,"dropped_through":0,)"
                            R"("left":0,"rate":0}}})"));
  CHECK_FALSE(decode_holder(R"({"owner":"x","tags":{"a":{"from":1,"to":8,"dropped_through":0,)"
                            R"("left":0,"rate":-1}}})"));
  CHECK_FALSE(decode_holder(R"({"owner":"x"})"));
  CHECK_FALSE(decode_holder("not json"));
}

TEST_CASE("holder node: a raise waits for a run only while it may hand out a number at or below it",
          "[sequence]") {
  const HolderRecord r{"h", {{"order", {4100, 6000, 0, 1900, 1}}}};
  CHECK(holds_unconfirmed(r, "order", 4100));
  CHECK(holds_unconfirmed(r, "order", 10'000));
  CHECK_FALSE(holds_unconfirmed(r, "order", 4099));      // all it holds is above
  CHECK_FALSE(holds_unconfirmed(r, "invoice", 10'000));  // holds none of it
  HolderRecord dropped = r;
  dropped.tags["order"].dropped_through = 5000;
  CHECK_FALSE(holds_unconfirmed(dropped, "order", 5000));
  CHECK(holds_unconfirmed(dropped, "order", 5001));
  HolderRecord empty = r;
  empty.tags["order"].from = 6000;  // all handed out
  CHECK_FALSE(holds_unconfirmed(empty, "order", 10'000));
}

TEST_CASE("state directory: the previous run's token read, this run's written in its place",
          "[sequence]") {
  test::TempDir dir;
  const auto first = state::swap_sequence_run(dir.path().string(), "aaaa1111");
  REQUIRE(first);
  CHECK_FALSE(first.value());
  const auto second = state::swap_sequence_run(dir.path().string(), "bbbb2222");
  REQUIRE(second);
  CHECK(second.value() == std::optional<std::string>("aaaa1111"));
  // A torn or foreign file names no run.
  std::ofstream(dir.path() / "sequence-run") << "not a token!\n";
  CHECK_FALSE(state::swap_sequence_run(dir.path().string(), "cccc3333").value());
}
