// The UUID form (RFC 9562 version 7): the ID's time in unix_ts_ms, its
// sequence, datacenter and worker after it, random bits in the rest; one
// daemon's UUIDs increase within a millisecond, and a UUID decodes back.

#include <catch2/catch.hpp>

#include <string>

#include "snowflake/forms/uuid_form.hpp"

using namespace snowflake;
using namespace snowflake::forms;

namespace {

constexpr std::int64_t kNow = kDefaultEpochMs + 700'000'000'000;

IdLayout layout_of(LayoutSettings s) { return IdLayout::create(s, kNow).value(); }

std::string uuid(std::uint64_t id, const IdLayout& layout, UuidRandom r = {}) {
  std::string out;
  append_uuid(out, id, layout, r);
  return out;
}

}  // namespace

TEST_CASE("UUID form: version 7, the ID's time, and back to the ID", "[forms][uuid]") {
  const IdLayout layout = layout_of({});
  REQUIRE(check_uuid_layout(layout));
  const std::uint64_t id = layout.compose(kNow, 0, 142, 7).value();
  const std::string u = uuid(id, layout, {0xffff'ffff'ffff'ffffULL, 0xffff'ffff'ffff'ffffULL});
  REQUIRE(u.size() == 36);
  CHECK(looks_like_uuid(u));
  CHECK(u[14] == '7');                                          // version 7
  CHECK(std::string("89ab").find(u[19]) != std::string::npos);  // variant 10
  // unix_ts_ms: the first 12 hex digits.
  CHECK(std::stoll(u.substr(0, 8) + u.substr(9, 4), nullptr, 16) == kNow);
  CHECK(id_of_uuid(u, layout).value() == id);
  // Upper case reads too; the random bits do not change the ID.
  std::string upper = u;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  CHECK(id_of_uuid(upper, layout).value() == id);
  CHECK(id_of_uuid(uuid(id, layout, uuid_random()), layout).value() == id);
}

TEST_CASE("UUID form: within a millisecond, one daemon's UUIDs increase with the sequence",
          "[forms][uuid]") {
  const IdLayout layout = layout_of({});
  std::string previous;
  for (std::uint32_t seq = 0; seq < 4096; seq += 1) {
    const std::string u = uuid(layout.compose(kNow, 0, 5, seq).value(), layout, uuid_random());
    CHECK(u > previous);
    previous = u;
  }
  // The next millisecond's first is above this one's last.
  CHECK(uuid(layout.compose(kNow + 1, 0, 0, 0).value(), layout, uuid_random()) > previous);
  // Another worker's UUID of the same time and sequence differs.
  CHECK(uuid(layout.compose(kNow, 0, 5, 9).value(), layout) !=
        uuid(layout.compose(kNow, 0, 6, 9).value(), layout));
}

TEST_CASE("UUID form: other layouts (sonyflake's 10 ms units, datacenters) go and come back",
          "[forms][uuid]") {
  for (const auto& s : {*find_layout_preset("sonyflake"), *find_layout_preset("twitter"),
                        LayoutSettings{.time_bits = 41, .datacenter_bits = 5, .worker_bits = 5}}) {
    const IdLayout layout = layout_of(s);
    REQUIRE(check_uuid_layout(layout));
    const std::uint64_t id = layout
                                 .compose(kNow, layout.max_datacenter_id(),
                                          layout.max_worker_id() / 2, layout.max_sequence())
                                 .value();
    INFO(layout.describe());
    CHECK(id_of_uuid(uuid(id, layout, uuid_random()), layout).value() == id);
  }
}

TEST_CASE("UUID form: what is not one of ours is refused, saying why", "[forms][uuid]") {
  const IdLayout layout = layout_of({});
  CHECK_THAT(id_of_uuid("not-a-uuid", layout).error(), Catch::Contains("36 characters"));
  // A version 4 UUID.
  CHECK_THAT(id_of_uuid("f47ac10b-58cc-4372-a567-0e02b2c3d479", layout).error(),
             Catch::Contains("version 7"));
  // Version 7, but its time is before the layout's epoch.
  CHECK_THAT(id_of_uuid("01890a5d-ac96-774b-bcce-b302099a8057", layout).error(),
             Catch::Contains("time"));
  // A layout whose times do not fit 48 bits of ms since 1970.
  const auto before_1970 = IdLayout::create({.epoch_ms = -1000}, kNow);
  if (before_1970) CHECK_FALSE(check_uuid_layout(before_1970.value()));
}
