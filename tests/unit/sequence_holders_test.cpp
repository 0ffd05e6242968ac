// A holder node's data (sequence_store/sequence_holders.hpp) and what `seq raise`
// reads from it; the state directory's previous run (state/sequence_run.hpp).
#include <catch2/catch.hpp>

#include <fstream>

#include "../support/child_process.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/state/sequence_run.hpp"
#include "snowflake/state/state_dir.hpp"

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

TEST_CASE(
    "state directory: the previous run's token read, proven over only in this boot and this "
    "very directory",
    "[sequence]") {
  test::TempDir dir;
  const std::string path = dir.path().string();
  const auto first = state::swap_sequence_run(path, "aaaa1111");
  REQUIRE(first);
  CHECK_FALSE(first.value());
  const auto second = state::swap_sequence_run(path, "bbbb2222");
  REQUIRE(second);
  REQUIRE(second.value());
  CHECK(second.value()->run == "aaaa1111");
  CHECK(second.value()->proven_over);

  // A copy of the directory (cp -a of a running daemon's state): the run it
  // names may still be handing out numbers.
  test::TempDir parent;
  const auto copy = parent.path() / "copy";
  test::copy_directory(dir.path(), copy);
  const auto copied = state::swap_sequence_run(copy.string(), "cccc3333");
  REQUIRE(copied);
  REQUIRE(copied.value());
  CHECK(copied.value()->run == "bbbb2222");
  CHECK_FALSE(copied.value()->proven_over);
  CHECK_THAT(copied.value()->why_not, Catch::Contains("copy"));

  // Another boot; and 0.4's file, the token alone.
  std::ofstream(dir.path() / "sequence-run")
      << R"({"run":"dddd4444","boot_id":"another-boot","dir_id":")"
      << state::directory_identity(path) << "\"}\n";
  const auto rebooted = state::swap_sequence_run(path, "eeee5555");
  REQUIRE(rebooted.value());
  CHECK_FALSE(rebooted.value()->proven_over);
  CHECK_THAT(rebooted.value()->why_not, Catch::Contains("another boot"));
  std::ofstream(dir.path() / "sequence-run") << "ffff6666\n";
  const auto old = state::swap_sequence_run(path, "gggg7777");
  REQUIRE(old.value());
  CHECK(old.value()->run == "ffff6666");
  CHECK_FALSE(old.value()->proven_over);

  // A torn or foreign file names no run.
  std::ofstream(dir.path() / "sequence-run") << "not a token!\n";
  CHECK_FALSE(state::swap_sequence_run(path, "hhhh8888").value());
}
