#include <catch2/catch.hpp>

#include <filesystem>

#include "../support/child_process.hpp"
#include "snowflake/state/state_file.hpp"

using namespace snowflake;
using namespace snowflake::state;

TEST_CASE("state file: saved atomically and read back whole", "[state]") {
  test::TempDir dir;
  StateFile file(dir.path().string());
  CHECK_FALSE(file.load().value().has_value());  // no file yet: no record, no error

  StateRecord r;
  r.strategy = CoordinatorType::recycle;
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

TEST_CASE("state file: numbers that do not fit their fields make it no state file", "[state]") {
  StateRecord r;
  r.strategy = CoordinatorType::recycle;
  r.worker_id = 7;
  r.hwm = 1'800'000'000'000;
  const std::string good = encode_state(r);
  REQUIRE(decode_state(good) == r);
  const auto with = [&good](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // Each of these was a plain cast before: undefined behaviour for a float
  // out of range, a wrapped worker ID for -1 (the fuzzer's find, tests/fuzz).
  CHECK_FALSE(decode_state(with("\"worker_id\":7", "\"worker_id\":-1")));
  CHECK_FALSE(decode_state(with("\"worker_id\":7", "\"worker_id\":1e20")));
  CHECK_FALSE(decode_state(with("\"worker_id\":7", "\"worker_id\":4294967296")));
  CHECK_FALSE(decode_state(with("\"hwm\":1800000000000", "\"hwm\":1e300")));
  CHECK_FALSE(decode_state(with("\"hwm\":1800000000000", "\"hwm\":1.5")));
  CHECK_FALSE(decode_state(with("\"format\":1", "\"format\":1.0")));

  test::TempDir dir;
  dir.write("worker.json", with("\"hwm\":1800000000000", "\"hwm\":1e300"));
  const auto loaded = StateFile(dir.path().string()).load();
  REQUIRE(loaded.has_error());
  CHECK_THAT(loaded.error(), Catch::Contains("not a snowflaked state file"));
}

TEST_CASE("state file: an unwritable directory is reported", "[state]") {
  StateFile file("/nonexistent/dir");
  StateRecord r;
  r.strategy = CoordinatorType::sequential;
  const auto saved = file.save(r);
  REQUIRE(saved.has_error());
  CHECK_THAT(saved.error(), Catch::Contains("/nonexistent/dir/worker.json.tmp"));
}
