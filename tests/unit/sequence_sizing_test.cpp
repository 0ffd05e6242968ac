// How big a sequence's next range is, and when it is fetched
// (sequence_sizing.hpp); the registry's lookup under concurrent adds
// (sequence_registry.hpp).

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "snowflake/sequences/registry.hpp"
#include "snowflake/sequences/sizing.hpp"

using namespace snowflake;
using namespace std::chrono_literals;

TEST_CASE("a range lasts the segment's duration at the rate, between the tag's step and the cap",
          "[sequence]") {
  const SequenceSizing sizing{900s, 1'000'000'000, 0.1};
  // 50,000 a second for 15 minutes.
  CHECK(next_range_size(50'000, 1000, 1000, sizing) == 45'000'000);
  // Nothing measured yet: the tag's step.
  CHECK(next_range_size(0, 0, 1000, sizing) == 1000);
  CHECK(next_range_size(0, 0, 0, sizing) == 1);
  // Rises at once, falls by half at most per range.
  CHECK(next_range_size(1'000, 10, 1, sizing) == 900'000);
  CHECK(next_range_size(1, 900'000, 1, sizing) == 450'000);
  // The cap holds, whatever the rate.
  CHECK(next_range_size(1e12, 1, 1, sizing) == 1'000'000'000);
  CHECK(next_range_size(1e12, 1, 1, SequenceSizing{900s, 5000, 0.1}) == 5000);
}

TEST_CASE("the next range is fetched once a share of the current one is used, and only one ahead",
          "[sequence]") {
  const SequenceSizing sizing{900s, 1'000'000, 0.1};
  CHECK_FALSE(should_refill(1000, 1000, 0, sizing));
  CHECK_FALSE(should_refill(1000, 901, 0, sizing));
  CHECK(should_refill(1000, 900, 0, sizing));
  CHECK(should_refill(0, 0, 0, sizing));             // nothing held at all
  CHECK_FALSE(should_refill(1000, 0, 500, sizing));  // the next one is queued
}

TEST_CASE("the rate is the smoothed slope of the running total", "[sequence]") {
  RateMeter meter(10s);
  const auto t0 = RateMeter::Clock::now();
  meter.sample(0, t0);
  CHECK(meter.per_second() == 0);
  // 1,000 a second for a minute: the average closes in on it.
  for (int s = 1; s <= 60; ++s) meter.sample(1000 * s, t0 + std::chrono::seconds(s));
  CHECK(meter.per_second() == Approx(1000).epsilon(0.01));
  // Stopped for a minute: it falls towards zero.
  for (int s = 61; s <= 120; ++s) meter.sample(60'000, t0 + std::chrono::seconds(s));
  CHECK(meter.per_second() < 10);
  CHECK(seconds_left(5000, 1000) == Approx(5));
  CHECK(seconds_left(5000, 0) == -1);
}

TEST_CASE("sequence registry: found by tag while tags are added, never a wrong entry",
          "[sequence]") {
  SequenceRegistry registry(64);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (int i = 0; i < 64; ++i) {
        const std::string tag = "tag" + std::to_string(i);
        if (SequenceEntry* e = registry.find(tag); e && e->tag != tag) wrong.fetch_add(1);
      }
    }
  });
  for (int i = 0; i < 64; ++i) registry.add("tag" + std::to_string(i));
  done.store(true);
  reader.join();
  CHECK(wrong.load() == 0);
  CHECK(registry.add("one more") == nullptr);  // full
  CHECK(registry.find("one more") == nullptr);
  CHECK(registry.add("tag7") == registry.find("tag7"));
  CHECK(registry.entries().size() == 64);
  for (int i = 0; i < 64; ++i) {
    const std::string tag = "tag" + std::to_string(i);
    REQUIRE(registry.find(tag));
    CHECK(registry.find(tag)->tag == tag);
  }
}

TEST_CASE("a refill request wakes the supplier's wait, once", "[sequence]") {
  SequenceRegistry registry(1);
  CHECK_FALSE(registry.wait_for_request(1ms));
  registry.request_refill();
  registry.request_refill();
  CHECK(registry.wait_for_request(10s));
  CHECK_FALSE(registry.wait_for_request(1ms));
}
