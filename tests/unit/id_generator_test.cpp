#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

#include "../support/manual_clock.hpp"
#include "snowflake/ids/generator.hpp"

using namespace snowflake;
using snowflake::test::ManualClock;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kStart = kDefaultEpochMs + 1'000'000;  // wall time when tests begin

IdLayout make_layout(LayoutSettings s = {}) { return IdLayout::create(s, kStart).value(); }

// 4 IDs per unit, so rollover is quick to reach.
const LayoutSettings kTinySequence{.time_bits = 51, .worker_bits = 10, .sequence_bits = 2};

std::unique_ptr<IdGenerator> make_generator(ManualClock& clock, const IdLayout& layout,
                                            GeneratorOptions options = {},
                                            std::uint32_t worker = 3) {
  auto g = IdGenerator::create(layout, worker, options, clock);
  REQUIRE(g.has_value());
  return std::move(g).value();
}

DecodedId decode(const IdGenerator& g, std::uint64_t id) {
  return g.layout().decompose(id).value();
}

}  // namespace

TEST_CASE("IDs carry the current time, the worker and a rising sequence", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout());
  const auto a = g->next().value();
  const auto b = g->next().value();
  CHECK(b > a);
  CHECK(decode(*g, a).timestamp_ms == kStart);
  CHECK(decode(*g, a).worker_id == 3);
  CHECK(decode(*g, a).sequence == 0);
  CHECK(decode(*g, b).sequence == 1);
  clock.advance(1ms);
  const auto c = g->next().value();
  CHECK(decode(*g, c).timestamp_ms == kStart + 1);
  CHECK(decode(*g, c).sequence == 0);  // a new unit starts over
  CHECK(clock.sleeps() == 0);
  CHECK(g->high_water_mark_ms() == kStart + 1);
}

TEST_CASE("a used-up sequence waits for the next unit, never borrows time", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(kTinySequence));
  std::uint64_t last = 0;
  for (int i = 0; i < 4; ++i) {
    const auto id = g->next().value();
    CHECK(id > last);
    CHECK(decode(*g, id).timestamp_ms == kStart);
    last = id;
  }
  CHECK(clock.sleeps() == 0);
  const auto fifth = g->next().value();
  CHECK(fifth > last);
  CHECK(clock.sleeps() >= 1);            // it waited ...
  CHECK(clock.wall_ms() == kStart + 1);  // ... exactly until the next unit
  CHECK(decode(*g, fifth).timestamp_ms == kStart + 1);
  CHECK(decode(*g, fifth).sequence == 0);
  CHECK(g->stats().sequence_waits == 1);
}

TEST_CASE("a clock step back within max_backward_wait is waited out", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(), {.max_backward_wait = 5ms});
  const auto before = g->next().value();
  clock.set_wall_ms(kStart - 3);
  const auto after = g->next().value();
  CHECK(after > before);
  CHECK(decode(*g, after).timestamp_ms >= kStart);
  CHECK(clock.slept() >= 3ms);
  CHECK(g->stats().backward_waits == 1);
  CHECK(g->stats().backward_refusals == 0);
}

TEST_CASE("a big clock step back is refused with the gap until the clock catches up",
          "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(), {.max_backward_wait = 5ms});
  const auto before = g->next().value();

  clock.set_wall_ms(kStart - 1000);
  REQUIRE(g->check().has_value());
  CHECK(g->check()->code == GenerateErrc::clock_moved_backwards);
  CHECK(g->stats().backward_refusals == 0);  // check() is not a refusal
  for (int i = 0; i < 3; ++i) {
    const auto r = g->next();
    REQUIRE(r.has_error());
    CHECK(r.error().code == GenerateErrc::clock_moved_backwards);
    CHECK(r.error().gap == 1000ms);
    CHECK(to_string(r.error().code) == "clock_moved_backwards");
  }
  std::vector<std::uint64_t> batch{42};
  CHECK(g->next_n(10, batch).has_error());
  CHECK(batch == std::vector<std::uint64_t>{42});  // left as it was
  CHECK(clock.sleeps() == 0);                      // refusing does not wait

  clock.set_wall_ms(kStart - 6);  // still too far
  CHECK(g->next().error().gap == 6ms);
  clock.set_wall_ms(kStart - 5);  // within the wait: waits and succeeds
  CHECK_FALSE(g->check().has_value());
  const auto after = g->next().value();
  CHECK(after > before);
  CHECK(g->stats().backward_refusals == 5);
}

TEST_CASE("with no backward wait, refusal lasts exactly until the clock is back", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(), {.max_backward_wait = 0ms});
  const auto before = g->next().value();
  clock.set_wall_ms(kStart - 1);
  CHECK(g->next().error().gap == 1ms);
  clock.set_wall_ms(kStart);  // same unit as the last ID: continues its sequence
  const auto after = g->next().value();
  CHECK(after == before + 1);
}

TEST_CASE("the floor: no ID at or below it", "[generator]") {
  SECTION("floor in the past is no constraint") {
    ManualClock clock(kStart);
    auto g = make_generator(clock, make_layout(), {.floor_ms = kStart - 100});
    CHECK(decode(*g, g->next().value()).timestamp_ms == kStart);
    CHECK(clock.sleeps() == 0);
  }
  SECTION("floor at now: the first ID waits for the next unit") {
    ManualClock clock(kStart);
    auto g = make_generator(clock, make_layout(), {.floor_ms = kStart});
    CHECK(g->high_water_mark_ms() == kStart);
    CHECK(decode(*g, g->next().value()).timestamp_ms == kStart + 1);
  }
  SECTION("floor ahead within max_floor_wait: creation waits") {
    ManualClock clock(kStart);
    auto g =
        make_generator(clock, make_layout(), {.floor_ms = kStart + 500, .max_floor_wait = 1000ms});
    CHECK(clock.wall_ms() == kStart + 501);
    CHECK(decode(*g, g->next().value()).timestamp_ms == kStart + 501);
  }
  SECTION("floor ahead beyond max_floor_wait: creation fails with the gap") {
    ManualClock clock(kStart);
    auto g = IdGenerator::create(make_layout(), 0,
                                 {.floor_ms = kStart + 2000, .max_floor_wait = 1000ms}, clock);
    REQUIRE(g.has_error());
    CHECK(g.error().code == GenerateErrc::clock_behind_floor);
    CHECK(g.error().gap == 2001ms);
    CHECK(g.error().message().find("2001 ms behind the floor") != std::string::npos);
  }
  SECTION("a floor inside a longer unit forbids that whole unit") {
    const auto layout =
        make_layout({.time_bits = 38, .worker_bits = 10, .sequence_bits = 15, .time_unit_ms = 10});
    const std::int64_t unit_start = layout.unit_start_ms(layout.unit_of_ms(kStart));
    ManualClock clock(unit_start);
    auto g = make_generator(clock, layout, {.floor_ms = unit_start + 5});
    const auto t = decode(*g, g->next().value()).timestamp_ms;
    CHECK(t > unit_start + 5);
    CHECK(t == unit_start + 10);
  }
}

TEST_CASE("next_n: strictly increasing, consecutive within a unit, spans units", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout());

  std::vector<std::uint64_t> small;
  REQUIRE(g->next_n(10, small).has_value());
  REQUIRE(small.size() == 10);
  for (std::size_t i = 1; i < small.size(); ++i) CHECK(small[i] == small[i - 1] + 1);

  std::vector<std::uint64_t> big;
  REQUIRE(g->next_n(10'000, big).has_value());
  REQUIRE(big.size() == 10'000);
  CHECK(big.front() > small.back());
  std::set<std::int64_t> units;
  for (std::size_t i = 0; i < big.size(); ++i) {
    const auto d = decode(*g, big[i]);
    units.insert(d.timestamp_ms);
    if (i == 0) continue;
    REQUIRE(big[i] > big[i - 1]);
    if (d.timestamp_ms == decode(*g, big[i - 1]).timestamp_ms) REQUIRE(big[i] == big[i - 1] + 1);
  }
  // 4096 per unit: 4086 left in the first unit, then 4096, then 1818.
  CHECK(units == std::set<std::int64_t>{kStart, kStart + 1, kStart + 2});
  CHECK(g->stats().sequence_waits == 2);
}

TEST_CASE("time past the layout's end of life is an error, not a wrapped ID", "[generator]") {
  const auto layout =
      make_layout({.time_bits = 31, .worker_bits = 1, .sequence_bits = 31, .time_unit_ms = 1000});
  ManualClock clock(layout.end_of_life_ms() - 1000);
  auto g = make_generator(clock, layout, {}, 1);
  const auto last = g->next().value();
  CHECK(decode(*g, last).timestamp_ms == layout.end_of_life_ms() - 1000);
  clock.advance(1000ms);
  const auto r = g->next();
  REQUIRE(r.has_error());
  CHECK(r.error().code == GenerateErrc::time_exhausted);
}

TEST_CASE("a wall clock before the epoch is an error", "[generator]") {
  ManualClock clock(kDefaultEpochMs - 50);
  auto g = make_generator(clock, make_layout());
  const auto r = g->next();
  REQUIRE(r.has_error());
  CHECK(r.error().code == GenerateErrc::clock_before_epoch);
  CHECK(r.error().gap == 50ms);
  CHECK(clock.sleeps() == 0);
  clock.set_wall_ms(kDefaultEpochMs);
  CHECK(decode(*g, g->next().value()).timestamp_ms == kDefaultEpochMs);
}

TEST_CASE("random sequence start stays below its bound and varies", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(),
                          {.sequence_start = SequenceStart::random, .random_sequence_bound = 16});
  std::set<std::uint32_t> starts;
  for (int i = 0; i < 200; ++i) {
    const auto first = decode(*g, g->next().value());
    CHECK(first.sequence < 16);
    starts.insert(first.sequence);
    const auto second = decode(*g, g->next().value());
    CHECK(second.sequence == first.sequence + 1);  // only the unit's start is random
    clock.advance(1ms);
  }
  CHECK(starts.size() > 8);
}

TEST_CASE("random start near the top still fills the unit and rolls over", "[generator]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout(kTinySequence),
                          {.sequence_start = SequenceStart::random, .random_sequence_bound = 4});
  std::vector<std::uint64_t> ids;
  REQUIRE(g->next_n(50, ids).has_value());
  for (std::size_t i = 1; i < ids.size(); ++i) REQUIRE(ids[i] > ids[i - 1]);
}

TEST_CASE("preconditions are checked", "[generator]") {
  ManualClock clock(kStart);
  CHECK_THROWS_AS(IdGenerator::create(make_layout(), 1024, {}, clock), std::invalid_argument);
  CHECK_THROWS_AS(
      IdGenerator::create(make_layout(), 0,
                          {.sequence_start = SequenceStart::random, .random_sequence_bound = 4097},
                          clock),
      std::invalid_argument);
}

TEST_CASE("close() is final: no ceiling set afterwards reopens it", "[generator][safety]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout());
  const auto last = g->next().value();
  g->close();
  CHECK(g->closed());
  // A state-file write or a heartbeat that raced the close lands after it.
  g->set_reservation_ms(kStart + 60'000);
  g->set_fence_ms(kStart + 60'000);
  for (int i = 0; i < 3; ++i) {
    CHECK(g->next().error().code == GenerateErrc::time_not_reserved);  // same unit
    clock.advance(1ms);
    CHECK(g->next().error().code == GenerateErrc::time_not_reserved);  // a new one
  }
  std::vector<std::uint64_t> out;
  CHECK(g->next_n(5000, out).has_error());
  CHECK(out.empty());
  CHECK(g->check()->code == GenerateErrc::time_not_reserved);
  CHECK(g->high_water_mark_ms() == decode(*g, last).timestamp_ms);
}

TEST_CASE("the time fence: nothing stamped past it, refused as lease_expired",
          "[generator][safety]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout());
  g->set_fence_ms(kStart + 10);
  clock.advance(10ms);
  CHECK(decode(*g, g->next().value()).timestamp_ms == kStart + 10);
  clock.advance(1ms);
  const auto r = g->next();
  REQUIRE(r.has_error());
  CHECK(r.error().code == GenerateErrc::lease_expired);
  CHECK(to_string(r.error().code) == "lease_expired");
  // A wall clock that jumps far ahead is refused the same way.
  clock.advance(12s);
  CHECK(g->next().error().code == GenerateErrc::lease_expired);
  // The lower of the two ceilings decides, and names itself.
  g->set_fence_ms(kStart + 60'000);
  g->set_reservation_ms(kStart + 100);
  CHECK(g->next().error().code == GenerateErrc::time_not_reserved);
  g->set_reservation_ms(kStart + 60'000);
  CHECK(decode(*g, g->next().value()).timestamp_ms == kStart + 12'011);
}

namespace {

// A manual clock whose wall clock steps back by `step` during the first
// sleep, as an NTP step would during a wait.
class SteppingClock final : public Clock {
 public:
  SteppingClock(std::int64_t wall_ms, std::chrono::milliseconds step)
      : inner_(wall_ms), step_(step) {}
  std::int64_t wall_ns() const noexcept override { return inner_.wall_ns(); }
  snowflake::BootClock::time_point monotonic() const noexcept override {
    return inner_.monotonic();
  }
  void sleep_for(std::chrono::nanoseconds d) override {
    inner_.sleep_for(d);
    if (!stepped_) inner_.set_wall_ms(inner_.wall_ms() - step_.count());
    stepped_ = true;
  }
  std::chrono::nanoseconds slept() const { return inner_.slept(); }

 private:
  ManualClock inner_;
  std::chrono::milliseconds step_;
  bool stepped_ = false;
};

}  // namespace

TEST_CASE("a wait re-reads the clock: a step back during a sequence wait is refused at once",
          "[generator][safety]") {
  // 1 s units of 4 IDs: the fifth ID waits up to a second for the next unit.
  const auto layout =
      make_layout({.time_bits = 51, .worker_bits = 10, .sequence_bits = 2, .time_unit_ms = 1000});
  const std::int64_t unit_start = layout.unit_start_ms(layout.unit_of_ms(kStart));
  SteppingClock clock(unit_start, 120s);
  auto g = IdGenerator::create(layout, 1, {}, clock).value();
  std::vector<std::uint64_t> ids;
  REQUIRE(g->next_n(4, ids).has_value());
  const auto r = g->next();
  REQUIRE(r.has_error());
  CHECK(r.error().code == GenerateErrc::clock_moved_backwards);
  CHECK(r.error().gap >= 119s);
  // It slept one short slice, not the second left nor the 120 s of the step.
  CHECK(clock.slept() <= 5ms);
}

TEST_CASE("start_behind_floor: made anyway, refusing until the clock passes the floor",
          "[generator]") {
  ManualClock clock(kStart);
  auto g =
      IdGenerator::create(
          make_layout(), 0,
          {.floor_ms = kStart + 3000, .max_floor_wait = 1000ms, .start_behind_floor = true}, clock)
          .value();
  CHECK(clock.sleeps() == 0);
  CHECK(g->next().error().code == GenerateErrc::clock_moved_backwards);
  clock.advance(3001ms);
  CHECK(decode(*g, g->next().value()).timestamp_ms == kStart + 3001);
}

TEST_CASE("creation's floor wait is bounded on the monotonic clock too", "[generator]") {
  // The wall clock steps back 5 s during the wait for a floor 500 ms ahead.
  SteppingClock clock(kStart, 5s);
  auto g = IdGenerator::create(make_layout(), 0,
                               {.floor_ms = kStart + 500, .max_floor_wait = 1000ms}, clock);
  REQUIRE(g.has_error());
  CHECK(g.error().code == GenerateErrc::clock_behind_floor);
  CHECK(clock.slept() < 1200ms);
}

TEST_CASE("the cluster floor: raised while issuing, nothing at or below it after the raise",
          "[generator][floor]") {
  ManualClock clock(kStart);
  const IdLayout layout = make_layout();
  auto g = make_generator(clock, layout);
  const auto before = g->next().value();
  // N: an ID of another worker, 10 ms ahead (an old system's clock ran fast).
  const std::uint64_t n = layout.compose(kStart + 10, 0, 1023, 4095).value();
  g->raise_migration_floor(decode(*g, n).timestamp_ms);
  CHECK(g->migration_floor_ms() == kStart + 10);
  // Until the clock passes the floor's unit: floor_ahead, with the wait.
  const auto refused = g->next();
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == GenerateErrc::floor_ahead);
  CHECK(refused.error().gap == 11ms);
  CHECK(g->check()->code == GenerateErrc::floor_ahead);
  CHECK_THAT(refused.error().message(), Catch::Contains("migration floor"));
  clock.advance(10ms);  // in the floor's unit: waits for the next one
  const auto after = g->next().value();
  CHECK(after > n);
  CHECK(after > before);
  CHECK(decode(*g, after).timestamp_ms == kStart + 11);
  // A lower floor changes nothing; a floor in the past only marks time used.
  g->raise_migration_floor(kStart);
  CHECK(g->migration_floor_ms() == kStart + 10);
  CHECK(g->next().value() > after);
}

TEST_CASE("the cluster floor: a clock behind the newest ID above the floor is still a step back",
          "[generator][floor]") {
  ManualClock clock(kStart);
  auto g = make_generator(clock, make_layout());
  g->raise_migration_floor(kStart - 100);  // in the past: nothing to wait for
  CHECK(g->next().has_value());
  clock.set_wall_ms(kStart - 50);  // behind an issued ID, not behind the floor
  CHECK(g->next().error().code == GenerateErrc::clock_moved_backwards);
  // A closed generator stays closed whatever floor comes.
  g->close();
  g->raise_migration_floor(kStart + 1'000);
  clock.set_wall_ms(kStart + 2'000);
  CHECK(g->next().has_error());
}
