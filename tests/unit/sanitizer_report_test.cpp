// What makes a child process's stderr fail its test (ChildProcess's
// destructor): a sanitizer report, and nothing a daemon logs otherwise.
#include <catch2/catch.hpp>

#include "../support/child_process.hpp"

using snowflake::test::sanitizer_report;

TEST_CASE("sanitizer reports in a child's stderr are found, from their first line", "[support]") {
  const std::string log =
      "[2026-11-23 07:00:00.000] [info] listening on 127.0.0.1:41234 with 2 io threads\n";
  CHECK_FALSE(sanitizer_report(log));
  CHECK_FALSE(
      sanitizer_report(log + "[warning] ZooKeeper connection_loss: runtime errors happen\n"));

  const std::string tsan =
      "==================\nWARNING: ThreadSanitizer: data race (pid=1)\n  Write of size 8\n";
  REQUIRE(sanitizer_report(log + tsan));
  CHECK(sanitizer_report(log + tsan)->starts_with("WARNING: ThreadSanitizer: data race"));

  const std::string ubsan = "src/ids/generator.cpp:42:7: runtime error: signed integer overflow\n";
  REQUIRE(sanitizer_report(log + ubsan));
  CHECK(*sanitizer_report(log + ubsan) == ubsan);

  CHECK(sanitizer_report("==7==ERROR: AddressSanitizer: heap-use-after-free on address\n"));
  CHECK(sanitizer_report("==7==ERROR: LeakSanitizer: detected memory leaks\n"));
}
