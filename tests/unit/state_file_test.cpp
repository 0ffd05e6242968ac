#include <catch2/catch.hpp>

#include <filesystem>

#include "../support/child_process.hpp"
#include "snowflake/coord/state_file.hpp"

using namespace snowflake;
using namespace snowflake::coord;

TEST_CASE("state file: saved atomically and read back whole", "[state]") {
  test::TempDir dir;
  StateFile file(dir.path().string());
  CHECK_FALSE(file.load().value().has_value());  // no file yet: no record, no error

  StateRecord r;
  r.strategy = "recycle";
  r.root = "/snowflake/x";
  r.worker_id = 42;
  r.node = "/snowflake/x/pool/inuse/42";
  r.owner = OwnerToken{"host", 8080, 1234, "abcd"};
  r.layout.worker_bits = 9;
  r.layout.sequence_bits = 13;
  r.hwm = 1'800'000'000'000;
  r.reserved_until = 1'800'000'000'300;
  REQUIRE(file.save(r));
  const auto back = file.load().value().value();
  CHECK(back.strategy == r.strategy);
  CHECK(back.root == r.root);
  CHECK(back.worker_id == 42);
  CHECK(back.node == r.node);
  CHECK(back.owner == r.owner);
  CHECK(back.layout == r.layout);
  CHECK(back.hwm == r.hwm);
  CHECK(back.reserved_until == r.reserved_until);
  CHECK_FALSE(std::filesystem::exists(file.path() + ".tmp"));

  r.owner.reset();
  REQUIRE(file.save(r));
  CHECK_FALSE(file.load().value()->owner.has_value());
}

TEST_CASE("state file: a damaged file is an error, never 'no floor'", "[state]") {
  test::TempDir dir;
  dir.write("worker.json", "{\"format\": 1, \"worker_id\": ");
  const auto loaded = StateFile(dir.path().string()).load();
  REQUIRE(loaded.has_error());
  CHECK_THAT(loaded.error(), Catch::Contains("worker.json") && Catch::Contains("move it away"));
}

TEST_CASE("state file: an unwritable directory is reported", "[state]") {
  StateFile file("/nonexistent/dir");
  StateRecord r;
  r.strategy = "sequential";
  const auto saved = file.save(r);
  REQUIRE(saved.has_error());
  CHECK_THAT(saved.error(), Catch::Contains("/nonexistent/dir/worker.json.tmp"));
}
