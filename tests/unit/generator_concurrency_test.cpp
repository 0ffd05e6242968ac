// Several threads share one generator on the real clock: every ID unique,
// and each thread sees its own IDs strictly increasing.

#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "snowflake/ids/generator.hpp"

using namespace snowflake;

namespace {

void check_unique_and_ordered(const std::vector<std::vector<std::uint64_t>>& per_thread,
                              std::size_t expected_total) {
  std::vector<std::uint64_t> all;
  for (const auto& ids : per_thread) {
    for (std::size_t i = 1; i < ids.size(); ++i) REQUIRE(ids[i] > ids[i - 1]);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  REQUIRE(all.size() == expected_total);
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

}  // namespace

TEST_CASE("threads x next(): no duplicate, each thread increasing", "[generator][concurrency]") {
  const auto layout = IdLayout::create({}, SystemClock::instance().wall_ms()).value();
  auto g = IdGenerator::create(layout, 7, {}).value();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100'000;
  std::vector<std::vector<std::uint64_t>> ids(kThreads);
  std::vector<int> refused(kThreads, 0);  // asserted on this thread: Catch2's are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ids[t].reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        const auto id = g->next();
        if (!id) {
          ++refused[t];
          return;
        }
        ids[t].push_back(id.value());
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(refused == std::vector<int>(kThreads, 0));
  check_unique_and_ordered(ids, kThreads * kPerThread);
}

TEST_CASE("threads mixing next() and next_n(): no duplicate", "[generator][concurrency]") {
  // Small sequence space so threads keep crossing unit boundaries.
  const auto layout = IdLayout::create({.time_bits = 45, .worker_bits = 10, .sequence_bits = 8},
                                       SystemClock::instance().wall_ms())
                          .value();
  auto g = IdGenerator::create(
               layout, 1, {.sequence_start = SequenceStart::random, .random_sequence_bound = 32})
               .value();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20'000;
  std::vector<std::vector<std::uint64_t>> ids(kThreads);
  std::vector<int> refused(kThreads, 0);  // asserted on this thread: Catch2's are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (ids[t].size() < kPerThread) {
        bool issued = true;
        if (t % 2 == 0) {
          const auto id = g->next();
          if (id) ids[t].push_back(id.value());
          issued = id.has_value();
        } else {
          issued =
              g->next_n(std::min<std::size_t>(300, kPerThread - ids[t].size()), ids[t]).has_value();
        }
        if (!issued) {
          ++refused[t];
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(refused == std::vector<int>(kThreads, 0));
  check_unique_and_ordered(ids, kThreads * kPerThread);
}
