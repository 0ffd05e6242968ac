#include <catch2/catch.hpp>

#include <limits>
#include <random>

#include "snowflake/id_layout.hpp"
#include "snowflake/time_format.hpp"

using namespace snowflake;

namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;  // 2027-01-15, a fixed "now"

IdLayout make(const LayoutSettings& s) { return IdLayout::create(s, kNow).value(); }

LayoutError error_of(const LayoutSettings& s) {
  auto r = IdLayout::create(s, kNow);
  REQUIRE(r.has_error());
  return r.error();
}

}  // namespace

TEST_CASE("default layout: 41/10/12 bits, 1 ms, 2025 epoch, ends in 2094", "[layout]") {
  const IdLayout layout = make({});
  CHECK(layout.max_worker_id() == 1023);
  CHECK(layout.max_sequence() == 4095);
  CHECK(layout.max_time_unit() == (std::int64_t{1} << 41) - 1);
  CHECK(format_iso8601_ms(layout.settings().epoch_ms) == "2025-01-01T00:00:00.000Z");
  CHECK(format_iso8601_ms(layout.end_of_life_ms()) == "2094-09-07T15:47:35.552Z");
  CHECK(layout.describe().find("41/10/12") != std::string::npos);
}

TEST_CASE("compose and decompose place each field in its bits", "[layout]") {
  const IdLayout layout = make({});
  const std::int64_t t = kDefaultEpochMs + 1000;
  const std::uint64_t id = layout.compose(t, 5, 7).value();
  CHECK(id == ((std::uint64_t{1000} << 22) | (5u << 12) | 7u));
  const DecodedId d = layout.decompose(id).value();
  CHECK(d.id == id);
  CHECK(d.timestamp_ms == t);
  CHECK(d.worker_id == 5);
  CHECK(d.sequence == 7);
}

TEST_CASE("round trip over many random valid layouts and values", "[layout]") {
  std::mt19937_64 rng(20261121);
  for (int i = 0; i < 2000; ++i) {
    LayoutSettings s;
    s.worker_bits = std::uniform_int_distribution<int>(1, 20)(rng);
    s.sequence_bits = std::uniform_int_distribution<int>(1, 20)(rng);
    s.time_bits = kIdBits - s.worker_bits - s.sequence_bits;
    s.time_unit_ms = std::uniform_int_distribution<std::int64_t>(1, 1000)(rng);
    s.epoch_ms = std::uniform_int_distribution<std::int64_t>(0, kNow)(rng);
    auto created = IdLayout::create(s, kNow);
    if (!created) {
      // Only the 64-bit-milliseconds overflow may reject a layout drawn here.
      REQUIRE(created.error().field == "time_bits");
      continue;
    }
    const IdLayout& layout = created.value();
    const std::int64_t unit = std::uniform_int_distribution<std::int64_t>(0, layout.max_time_unit())(rng);
    const std::int64_t within = std::uniform_int_distribution<std::int64_t>(0, s.time_unit_ms - 1)(rng);
    const std::int64_t t = layout.unit_start_ms(unit) + within;
    const auto worker = std::uniform_int_distribution<std::uint32_t>(0, layout.max_worker_id())(rng);
    const auto seq = std::uniform_int_distribution<std::uint32_t>(0, layout.max_sequence())(rng);

    const std::uint64_t id = layout.compose(t, worker, seq).value();
    INFO("layout " << layout.describe() << " unit " << unit);
    CHECK(id >> 63 == 0);
    CHECK(id == layout.compose_unit(unit, worker, seq));
    const DecodedId d = layout.decompose(id).value();
    CHECK(d.timestamp_ms == layout.unit_start_ms(unit));  // truncated to its unit
    CHECK(d.worker_id == worker);
    CHECK(d.sequence == seq);
  }
}

TEST_CASE("the largest ID of a layout is a positive int64", "[layout]") {
  const IdLayout layout = make({});
  const std::uint64_t id = layout.compose(layout.end_of_life_ms() - 1, layout.max_worker_id(),
                                          layout.max_sequence()).value();
  CHECK(id == static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

TEST_CASE("every layout validation error names its field", "[layout]") {
  SECTION("each field at least one bit") {
    CHECK(error_of({.time_bits = 0, .worker_bits = 31, .sequence_bits = 32}).field == "time_bits");
    CHECK(error_of({.time_bits = 53, .worker_bits = 0, .sequence_bits = 10}).field == "worker_bits");
    CHECK(error_of({.time_bits = 53, .worker_bits = 10, .sequence_bits = 0}).field ==
          "sequence_bits");
    CHECK(error_of({.time_bits = -1, .worker_bits = 32, .sequence_bits = 32}).message ==
          "must be an integer from 1 to 61, got -1");
  }
  SECTION("worker and sequence fit 31 bits") {
    CHECK(error_of({.time_bits = 30, .worker_bits = 1, .sequence_bits = 32}).field ==
          "sequence_bits");
    CHECK(error_of({.time_bits = 30, .worker_bits = 32, .sequence_bits = 1}).field ==
          "worker_bits");
  }
  SECTION("bits sum to 63") {
    const auto e = error_of({.time_bits = 41, .worker_bits = 10, .sequence_bits = 13});
    CHECK(e.field.empty());
    CHECK(e.message.find("must be 63") != std::string::npos);
    CHECK(e.message.find("41 + 10 + 13 = 64") != std::string::npos);
    CHECK(error_of({.time_bits = 40, .worker_bits = 10, .sequence_bits = 12}).field.empty());
  }
  SECTION("time unit from 1 ms to one day") {
    CHECK(error_of({.time_unit_ms = 0}).field == "time_unit_ms");
    CHECK(error_of({.time_unit_ms = -10}).field == "time_unit_ms");
    CHECK(error_of({.time_unit_ms = 86'400'001}).field == "time_unit_ms");
    CHECK(IdLayout::create({.time_unit_ms = 10}, kNow).has_value());  // sonyflake's unit
  }
  SECTION("epoch neither before 1970 nor in the future") {
    CHECK(error_of({.epoch_ms = -1}).field == "epoch");
    const auto e = error_of({.epoch_ms = kNow + 1});
    CHECK(e.field == "epoch");
    CHECK(e.message.find("future") != std::string::npos);
    CHECK(IdLayout::create({.epoch_ms = kNow}, kNow).has_value());
  }
  SECTION("time range must fit 64-bit milliseconds") {
    const auto e = error_of({.time_bits = 61, .worker_bits = 1, .sequence_bits = 1,
                             .time_unit_ms = 1000});
    CHECK(e.field == "time_bits");
    CHECK(e.message.find("overflow") != std::string::npos);
  }
}

TEST_CASE("worker ID range check", "[layout]") {
  const IdLayout layout = make({});
  CHECK(layout.check_worker_id(0).has_value());
  CHECK(layout.check_worker_id(1023).has_value());
  const auto e = layout.check_worker_id(1024);
  REQUIRE(e.has_error());
  CHECK(e.error().field == "worker_id");
  CHECK(e.error().message == "worker ID 1024 is out of range 0..1023 (10 worker bits)");
  CHECK(layout.check_worker_id(-1).has_error());
}

TEST_CASE("compose rejects out-of-range fields and instants, never wraps", "[layout]") {
  const IdLayout layout = make({});
  const std::int64_t t = kDefaultEpochMs + 5;
  CHECK(layout.compose(t, 1024, 0).error().field == "worker_id");
  CHECK(layout.compose(t, 0, 4096).error().field == "sequence");
  CHECK(layout.compose(t, 0, -1).error().field == "sequence");
  CHECK(layout.compose(kDefaultEpochMs - 1, 0, 0).error().field == "timestamp");
  const auto past_end = layout.compose(layout.end_of_life_ms(), 0, 0);
  REQUIRE(past_end.has_error());
  CHECK(past_end.error().field == "timestamp");
  CHECK(past_end.error().message.find("end of life") != std::string::npos);
  CHECK(layout.compose(layout.end_of_life_ms() - 1, 0, 0).has_value());
}

TEST_CASE("decompose rejects the sign bit", "[layout]") {
  const IdLayout layout = make({});
  CHECK(layout.decompose(std::uint64_t{1} << 63).error().field == "id");
  CHECK(layout.decompose(0).value().timestamp_ms == kDefaultEpochMs);
}

TEST_CASE("unit_of_ms floors, also before the epoch", "[layout]") {
  const IdLayout layout = make({.time_bits = 38, .worker_bits = 10, .sequence_bits = 15,
                                .time_unit_ms = 10});
  const std::int64_t e = layout.settings().epoch_ms;
  CHECK(layout.unit_of_ms(e) == 0);
  CHECK(layout.unit_of_ms(e + 9) == 0);
  CHECK(layout.unit_of_ms(e + 10) == 1);
  CHECK(layout.unit_of_ms(e - 1) == -1);
  CHECK(layout.unit_of_ms(e - 10) == -1);
  CHECK(layout.unit_of_ms(e - 11) == -2);
  CHECK(layout.unit_start_ms(3) == e + 30);
}
