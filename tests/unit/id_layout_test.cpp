#include <catch2/catch.hpp>

#include <limits>
#include <random>

#include "snowflake/base/time_format.hpp"
#include "snowflake/ids/layout.hpp"

using namespace snowflake;

namespace {

constexpr std::int64_t kLayoutNow = 1'800'000'000'000;  // 2027-01-15, a fixed "now"

IdLayout make(const LayoutSettings& s) { return IdLayout::create(s, kLayoutNow).value(); }

LayoutError layout_error_of(const LayoutSettings& s) {
  auto r = IdLayout::create(s, kLayoutNow);
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
  const std::uint64_t id = layout.compose(t, 0, 5, 7).value();
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
    s.epoch_ms = std::uniform_int_distribution<std::int64_t>(0, kLayoutNow)(rng);
    auto created = IdLayout::create(s, kLayoutNow);
    if (!created) {
      // Only the 64-bit-milliseconds overflow may reject a layout drawn here.
      REQUIRE(created.error().field == "time_bits");
      continue;
    }
    const IdLayout& layout = created.value();
    const std::int64_t unit =
        std::uniform_int_distribution<std::int64_t>(0, layout.max_time_unit())(rng);
    const std::int64_t within =
        std::uniform_int_distribution<std::int64_t>(0, s.time_unit_ms - 1)(rng);
    const std::int64_t t = layout.unit_start_ms(unit) + within;
    const auto worker =
        std::uniform_int_distribution<std::uint32_t>(0, layout.max_worker_id())(rng);
    const auto seq = std::uniform_int_distribution<std::uint32_t>(0, layout.max_sequence())(rng);

    const std::uint64_t id = layout.compose(t, 0, worker, seq).value();
    INFO("layout " << layout.describe() << " unit " << unit);
    CHECK(id >> 63 == 0);
    CHECK(id == layout.compose_unit(unit, layout.machine_bits(0, worker), seq));
    const DecodedId d = layout.decompose(id).value();
    CHECK(d.timestamp_ms == layout.unit_start_ms(unit));  // truncated to its unit
    CHECK(d.worker_id == worker);
    CHECK(d.sequence == seq);
  }
}

TEST_CASE("the largest ID of a layout is a positive int64", "[layout]") {
  const IdLayout layout = make({});
  const std::uint64_t id =
      layout.compose(layout.end_of_life_ms() - 1, 0, layout.max_worker_id(), layout.max_sequence())
          .value();
  CHECK(id == static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

TEST_CASE("every layout validation error names its field", "[layout]") {
  SECTION("each field at least one bit") {
    CHECK(layout_error_of({.time_bits = 0, .worker_bits = 31, .sequence_bits = 32}).field ==
          "time_bits");
    CHECK(layout_error_of({.time_bits = 53, .worker_bits = 0, .sequence_bits = 10}).field ==
          "worker_bits");
    CHECK(layout_error_of({.time_bits = 53, .worker_bits = 10, .sequence_bits = 0}).field ==
          "sequence_bits");
    CHECK(layout_error_of({.time_bits = -1, .worker_bits = 32, .sequence_bits = 32}).message ==
          "must be an integer from 1 to 61, got -1");
  }
  SECTION("datacenter bits from 0 to 31") {
    CHECK(layout_error_of(
              {.time_bits = 53, .datacenter_bits = -1, .worker_bits = 10, .sequence_bits = 1})
              .field == "datacenter_bits");
    CHECK(layout_error_of(
              {.time_bits = 20, .datacenter_bits = 32, .worker_bits = 10, .sequence_bits = 1})
              .message == "must be an integer from 0 to 31, got 32");
  }
  SECTION("worker and sequence fit 31 bits") {
    CHECK(layout_error_of({.time_bits = 30, .worker_bits = 1, .sequence_bits = 32}).field ==
          "sequence_bits");
    CHECK(layout_error_of({.time_bits = 30, .worker_bits = 32, .sequence_bits = 1}).field ==
          "worker_bits");
  }
  SECTION("bits sum to 63") {
    const auto e = layout_error_of({.time_bits = 41, .worker_bits = 10, .sequence_bits = 13});
    CHECK(e.field.empty());
    CHECK(e.message.find("must be 63") != std::string::npos);
    CHECK(e.message.find("41 + 0 + 10 + 13 = 64") != std::string::npos);
    CHECK(layout_error_of(
              {.time_bits = 41, .datacenter_bits = 1, .worker_bits = 10, .sequence_bits = 12})
              .message.find("41 + 1 + 10 + 12 = 64") != std::string::npos);
    CHECK(layout_error_of({.time_bits = 40, .worker_bits = 10, .sequence_bits = 12}).field.empty());
  }
  SECTION("time unit from 1 ms to one day") {
    CHECK(layout_error_of({.time_unit_ms = 0}).field == "time_unit_ms");
    CHECK(layout_error_of({.time_unit_ms = -10}).field == "time_unit_ms");
    CHECK(layout_error_of({.time_unit_ms = 86'400'001}).field == "time_unit_ms");
    CHECK(IdLayout::create({.time_unit_ms = 10}, kLayoutNow).has_value());  // sonyflake's unit
  }
  SECTION("epoch neither before 1970 nor in the future") {
    CHECK(layout_error_of({.epoch_ms = -1}).field == "epoch");
    const auto e = layout_error_of({.epoch_ms = kLayoutNow + 1});
    CHECK(e.field == "epoch");
    CHECK(e.message.find("future") != std::string::npos);
    CHECK(IdLayout::create({.epoch_ms = kLayoutNow}, kLayoutNow).has_value());
  }
  SECTION("time range must fit 64-bit milliseconds") {
    const auto e = layout_error_of(
        {.time_bits = 61, .worker_bits = 1, .sequence_bits = 1, .time_unit_ms = 1000});
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
  CHECK(layout.compose(t, 0, 1024, 0).error().field == "worker_id");
  CHECK(layout.compose(t, 0, 0, 4096).error().field == "sequence");
  CHECK(layout.compose(t, 0, 0, -1).error().field == "sequence");
  CHECK(layout.compose(kDefaultEpochMs - 1, 0, 0, 0).error().field == "timestamp");
  const auto past_end = layout.compose(layout.end_of_life_ms(), 0, 0, 0);
  REQUIRE(past_end.has_error());
  CHECK(past_end.error().field == "timestamp");
  CHECK(past_end.error().message.find("end of life") != std::string::npos);
  CHECK(layout.compose(layout.end_of_life_ms() - 1, 0, 0, 0).has_value());
}

TEST_CASE("decompose rejects the sign bit", "[layout]") {
  const IdLayout layout = make({});
  CHECK(layout.decompose(std::uint64_t{1} << 63).error().field == "id");
  CHECK(layout.decompose(0).value().timestamp_ms == kDefaultEpochMs);
}

TEST_CASE("unit_of_ms floors, also before the epoch", "[layout]") {
  const IdLayout layout =
      make({.time_bits = 38, .worker_bits = 10, .sequence_bits = 15, .time_unit_ms = 10});
  const std::int64_t e = layout.settings().epoch_ms;
  CHECK(layout.unit_of_ms(e) == 0);
  CHECK(layout.unit_of_ms(e + 9) == 0);
  CHECK(layout.unit_of_ms(e + 10) == 1);
  CHECK(layout.unit_of_ms(e - 1) == -1);
  CHECK(layout.unit_of_ms(e - 10) == -1);
  CHECK(layout.unit_of_ms(e - 11) == -2);
  CHECK(layout.unit_start_ms(3) == e + 30);
}

TEST_CASE("Twitter's order with a datacenter field: time | datacenter | worker | sequence",
          "[layout]") {
  const IdLayout layout =
      make({.time_bits = 41, .datacenter_bits = 5, .worker_bits = 5, .sequence_bits = 12});
  CHECK(layout.max_datacenter_id() == 31);
  CHECK(layout.max_worker_id() == 31);
  const std::int64_t t = kDefaultEpochMs + 1000;
  const std::uint64_t id = layout.compose(t, 17, 9, 7).value();
  CHECK(id == ((std::uint64_t{1000} << 22) | (17u << 17) | (9u << 12) | 7u));
  const DecodedId d = layout.decompose(id).value();
  CHECK(d.timestamp_ms == t);
  CHECK(d.datacenter_id == 17);
  CHECK(d.worker_id == 9);
  CHECK(d.sequence == 7);
  CHECK(layout.sequence_step() == 1);
  CHECK(layout.compose(t, 32, 0, 0).error().field == "datacenter_id");
  CHECK(layout.describe().starts_with("41/5/5/12 time/datacenter/worker/sequence bits"));
  // Without the field every datacenter ID but 0 is out of range, and says why.
  CHECK(make({}).check_datacenter_id(1).error().message.find("no datacenter field") !=
        std::string::npos);
}

TEST_CASE("sonyflake's order: the sequence above the datacenter and worker", "[layout]") {
  const IdLayout layout = make({.time_bits = 39,
                                .worker_bits = 16,
                                .sequence_bits = 8,
                                .time_unit_ms = 10,
                                .order = FieldOrder::sequence_high});
  const std::int64_t t = kDefaultEpochMs + 1000;  // 100 units of 10 ms
  // sony/sonyflake's toID(): time << (8 + 16) | sequence << 16 | machine.
  const std::uint64_t id = layout.compose(t, 0, 0xbeef, 200).value();
  CHECK(id == ((std::uint64_t{100} << 24) | (std::uint64_t{200} << 16) | 0xbeefu));
  const DecodedId d = layout.decompose(id).value();
  CHECK(d.timestamp_ms == t);
  CHECK(d.worker_id == 0xbeef);
  CHECK(d.sequence == 200);
  CHECK(layout.sequence_step() == std::uint64_t{1} << 16);
  CHECK(layout.describe().find("(order time,sequence,datacenter,worker)") != std::string::npos);

  // With a datacenter field too: sequence | datacenter | worker below the time.
  const IdLayout both = make({.time_bits = 40,
                              .datacenter_bits = 3,
                              .worker_bits = 8,
                              .sequence_bits = 12,
                              .order = FieldOrder::sequence_high});
  const std::uint64_t b = both.compose(kDefaultEpochMs + 5, 6, 200, 4000).value();
  CHECK(b == ((std::uint64_t{5} << 23) | (std::uint64_t{4000} << 11) | (6u << 8) | 200u));
  CHECK(both.decompose(b).value().datacenter_id == 6);
}

TEST_CASE("round trip with datacenter fields in both orders", "[layout]") {
  std::mt19937_64 rng(20261123);
  for (int i = 0; i < 2000; ++i) {
    LayoutSettings s;
    s.datacenter_bits = std::uniform_int_distribution<int>(0, 10)(rng);
    s.worker_bits = std::uniform_int_distribution<int>(1, 16)(rng);
    s.sequence_bits = std::uniform_int_distribution<int>(1, 16)(rng);
    s.time_bits = kIdBits - s.datacenter_bits - s.worker_bits - s.sequence_bits;
    s.order = i % 2 ? FieldOrder::sequence_high : FieldOrder::sequence_low;
    const IdLayout layout = make(s);
    const std::int64_t unit =
        std::uniform_int_distribution<std::int64_t>(0, layout.max_time_unit())(rng);
    const auto dc =
        std::uniform_int_distribution<std::uint32_t>(0, layout.max_datacenter_id())(rng);
    const auto worker =
        std::uniform_int_distribution<std::uint32_t>(0, layout.max_worker_id())(rng);
    const auto seq = std::uniform_int_distribution<std::uint32_t>(0, layout.max_sequence())(rng);
    const std::uint64_t id = layout.compose(layout.unit_start_ms(unit), dc, worker, seq).value();
    INFO(layout.describe());
    CHECK(id >> 63 == 0);
    const DecodedId d = layout.decompose(id).value();
    CHECK(d.timestamp_ms == layout.unit_start_ms(unit));
    CHECK(d.datacenter_id == dc);
    CHECK(d.worker_id == worker);
    CHECK(d.sequence == seq);
    // One sequence more is one step more, and still the same unit and machine.
    if (seq < layout.max_sequence()) {
      CHECK(layout.compose(layout.unit_start_ms(unit), dc, worker, seq + 1).value() ==
            id + layout.sequence_step());
    }
  }
}

TEST_CASE("presets are the other systems' layouts, as their sources have them", "[layout]") {
  const auto twitter = find_layout_preset("twitter").value();
  CHECK(twitter == LayoutSettings{41, 5, 5, 12, 1, 1'288'834'974'657, FieldOrder::sequence_low});
  const auto leaf = find_layout_preset("leaf").value();
  CHECK(leaf == LayoutSettings{41, 0, 10, 12, 1, 1'288'834'974'657, FieldOrder::sequence_low});
  const auto sonyflake = find_layout_preset("sonyflake").value();
  CHECK(sonyflake.epoch_ms == 1'409'529'600'000);  // 2014-09-01T00:00:00Z
  CHECK(sonyflake ==
        LayoutSettings{39, 0, 16, 8, 10, 1'409'529'600'000, FieldOrder::sequence_high});
  const auto shardingsphere = find_layout_preset("shardingsphere").value();
  CHECK(format_iso8601_ms(shardingsphere.epoch_ms) == "2016-11-01T00:00:00.000Z");
  CHECK(shardingsphere.worker_bits == 10);
  const auto uid = find_layout_preset("uid-generator").value();
  CHECK(uid == LayoutSettings{28, 0, 22, 13, 1000, 1'463'673'600'000, FieldOrder::sequence_low});
  // Its own comment: "Supports about 8.7 years until to 2024-11-20 21:24:16" (UTC+8).
  CHECK(format_iso8601_ms(make(uid).end_of_life_ms()) == "2024-11-20T13:24:16.000Z");
  CHECK_FALSE(find_layout_preset("Twitter"));
  for (const auto& p : layout_presets()) {
    INFO(p.name);
    CHECK(IdLayout::create(p.settings, kLayoutNow).has_value());
  }
}

TEST_CASE("an ID in Twitter's layout decodes as Twitter's IdWorker composed it", "[layout]") {
  // IdWorker.scala: ((ts - twepoch) << 22) | (datacenterId << 17) | (workerId << 12) | sequence.
  const std::int64_t ts = 1'577'820'376'771;  // 2019-12-31T19:26:16.771Z
  const std::uint64_t id =
      (std::uint64_t(ts - 1'288'834'974'657) << 22) | (10u << 17) | (7u << 12) | 42u;
  const IdLayout twitter = make(find_layout_preset("twitter").value());
  const DecodedId d = twitter.decompose(id).value();
  CHECK(d.timestamp_ms == ts);
  CHECK(d.datacenter_id == 10);
  CHECK(d.worker_id == 7);
  CHECK(d.sequence == 42);
  CHECK(twitter.compose(ts, 10, 7, 42).value() == id);
}
