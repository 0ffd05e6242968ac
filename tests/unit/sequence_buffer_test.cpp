// SequenceBuffer: the numbers of the ranges given to it, each once, in
// increasing order per thread, with floors and close() holding from the
// moment they return. Threads collect; the main thread asserts (Catch2 v2).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "snowflake/sequences/buffer.hpp"
#include "snowflake/sequences/replies.hpp"

using namespace snowflake;
using namespace std::chrono_literals;

namespace {

std::vector<std::int64_t> take(SequenceBuffer& b, std::size_t n) {
  std::vector<std::int64_t> out;
  b.take(n, out);
  return out;
}

}  // namespace

TEST_CASE("sequence buffer: dry until a range comes, then its numbers in order", "[sequence]") {
  SequenceBuffer b;
  CHECK(take(b, 3).empty());
  REQUIRE(b.add({100, 105}));
  CHECK(take(b, 3) == std::vector<std::int64_t>{100, 101, 102});
  // A batch runs on into the next range.
  REQUIRE(b.add({200, 202}));
  CHECK(take(b, 4) == std::vector<std::int64_t>{103, 104, 200, 201});
  CHECK(take(b, 1).empty());
  const auto s = b.state();
  CHECK(s.current_left == 0);
  CHECK_FALSE(s.first_unused);
}

TEST_CASE("sequence buffer: ranges out of order or empty are refused", "[sequence]") {
  SequenceBuffer b;
  REQUIRE(b.add({100, 200}));
  CHECK_FALSE(b.add({150, 300}));
  CHECK_FALSE(b.add({300, 300}));
  CHECK(b.add({200, 300}));
  CHECK(b.state().queued == 100);
}

TEST_CASE("sequence buffer: a floor drops what is at or below it, buffered or current",
          "[sequence]") {
  SequenceBuffer b;
  REQUIRE(b.add({1, 11}));
  REQUIRE(b.add({20, 30}));
  CHECK(take(b, 2) == std::vector<std::int64_t>{1, 2});
  b.drop_through(24);
  CHECK(take(b, 3) == std::vector<std::int64_t>{25, 26, 27});
  // Later ranges too.
  b.drop_through(40);
  REQUIRE(b.add({35, 45}));
  CHECK(take(b, 10) == std::vector<std::int64_t>{41, 42, 43, 44});
}

TEST_CASE("sequence buffer: close() ends handing out and tells the first unused number",
          "[sequence]") {
  SequenceBuffer b;
  REQUIRE(b.add({1, 11}));
  REQUIRE(b.add({11, 21}));
  CHECK(take(b, 4).size() == 4);
  b.close();
  CHECK(take(b, 1).empty());
  CHECK_FALSE(b.add({21, 30}));
  const auto s = b.state();
  REQUIRE(s.first_unused);
  CHECK(*s.first_unused == 5);
  CHECK(s.queued == 16);
}

TEST_CASE(
    "sequence buffer: threads racing over many small ranges get each number once, "
    "increasing per thread",
    "[sequence]") {
  SequenceBuffer b;
  constexpr int kThreads = 4;
  constexpr std::int64_t kRanges = 2000;
  constexpr std::int64_t kRangeSize = 7;  // small: switches all the time
  std::atomic<bool> adding{true};
  std::vector<std::vector<std::int64_t>> got(kThreads);
  std::vector<std::thread> takers;
  for (int t = 0; t < kThreads; ++t) {
    takers.emplace_back([&, t] {
      std::vector<std::int64_t> out;
      for (;;) {
        const bool more = adding.load();
        b.take(static_cast<std::size_t>(1 + t), out);
        if (!more && b.state().current_left == 0 && b.state().queued == 0) break;
      }
      got[static_cast<std::size_t>(t)] = std::move(out);
    });
  }
  for (std::int64_t r = 0; r < kRanges; ++r) {
    // Gaps between ranges, as another daemon's ranges leave them.
    b.add({r * 10, r * 10 + kRangeSize});
    if (r % 64 == 0) b.drop_through(r * 10 - 8);  // a floor now and then, below what is new
  }
  adding = false;
  for (auto& t : takers) t.join();
  std::set<std::int64_t> all;
  std::size_t total = 0;
  bool increasing = true;
  bool in_ranges = true;
  for (const auto& out : got) {
    total += out.size();
    all.insert(out.begin(), out.end());
    increasing = increasing && std::is_sorted(out.begin(), out.end()) &&
                 std::adjacent_find(out.begin(), out.end()) == out.end();
    in_ranges = in_ranges && std::all_of(out.begin(), out.end(),
                                         [](std::int64_t n) { return n % 10 < kRangeSize; });
  }
  CHECK(total == all.size());  // none twice
  CHECK(increasing);
  CHECK(in_ranges);
  CHECK(total > 0);
}

TEST_CASE("sequence buffer: a range at the top of int64 is handed out to its last number",
          "[sequence]") {
  SequenceBuffer b;
  // Starts within the top 2^31: a piece's end computed as start + 2^31
  // would overflow (and loop on, queueing pieces without end).
  REQUIRE(b.add({INT64_MAX - 5, INT64_MAX}));
  CHECK(b.state().ranges_queued + (b.state().current_size > 0 ? 1 : 0) == 1);
  CHECK(take(b, 10) == std::vector<std::int64_t>{INT64_MAX - 5, INT64_MAX - 4, INT64_MAX - 3,
                                                 INT64_MAX - 2, INT64_MAX - 1});
  CHECK(take(b, 1).empty());
}

TEST_CASE("sequence buffer: a range longer than a piece, ending at the top, goes in pieces",
          "[sequence]") {
  SequenceBuffer b;
  const std::int64_t start = INT64_MAX - 3 * kMaxSequenceRange - 7;
  REQUIRE(b.add({start, INT64_MAX}));
  const auto s = b.state();
  CHECK(s.current_left + s.queued == 3 * kMaxSequenceRange + 7);
  CHECK(s.ranges_queued + (s.current_size > 0 ? 1 : 0) == 4);
  CHECK(take(b, 2) == std::vector<std::int64_t>{start, start + 1});
  b.drop_through(INT64_MAX - 3);
  CHECK(take(b, 5) == std::vector<std::int64_t>{INT64_MAX - 2, INT64_MAX - 1});
  CHECK_FALSE(b.state().first_unused);
}

TEST_CASE("sequence buffer: a floor of INT64_MAX drops everything, now and later", "[sequence]") {
  SequenceBuffer b;
  REQUIRE(b.add({1, 100}));
  REQUIRE(b.add({INT64_MAX - 10, INT64_MAX}));
  CHECK(take(b, 1) == std::vector<std::int64_t>{1});
  // floor + 1 overflowed: the next numbers came out above INT64_MAX.
  b.drop_through(INT64_MAX);
  CHECK(take(b, 3).empty());
  CHECK_FALSE(b.state().first_unused);
  CHECK(b.state().current_left == 0);
  CHECK(b.state().queued == 0);
  // Nothing added after it is handed out either.
  SequenceBuffer c;
  c.drop_through(INT64_MAX);
  CHECK(c.add({5, 10}));
  CHECK(take(c, 3).empty());
}

TEST_CASE("replies in flight: a drain waits for the replies counted before it, not after",
          "[sequence]") {
  RepliesInFlight replies;
  auto before = replies.enter();
  CHECK(before);  // a token that is there tests true (the router keeps one per request)
  replies.begin_drain();
  auto after = replies.enter();
  CHECK_FALSE(replies.drained());
  before.reset();
  CHECK(replies.drained());  // the one counted after the drain began is not waited for
  replies.begin_drain();
  CHECK_FALSE(replies.drained());
  after.reset();
  CHECK(replies.drained());
}

TEST_CASE("replies in flight: a token counts once, whether moved, assigned over or destroyed",
          "[sequence]") {
  RepliesInFlight replies;
  {
    auto first = replies.enter();
    InFlightToken moved(std::move(first));
    CHECK_FALSE(first);  // NOLINT(bugprone-use-after-move): moved-from counts nothing
    CHECK(moved);
    replies.begin_drain();
    CHECK_FALSE(replies.drained());
    InFlightToken other;
    other = std::move(moved);
    CHECK_FALSE(replies.drained());
    other = InFlightToken{};  // assigned over: released
    CHECK(replies.drained());
    auto last = replies.enter();
    replies.begin_drain();
    CHECK_FALSE(replies.drained());
  }  // destroyed: released
  CHECK(replies.drained());
}
