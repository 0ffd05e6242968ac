// PeriodRule on the days that are not 24 hours long; every hour of 2026-2027
// in nine zones is checked against Python's zoneinfo by
// tests/reference/period_keys.py.
#include <catch2/catch.hpp>

#include <cstdint>

#include "snowflake/sequences/period.hpp"

using snowflake::Period;
using snowflake::PeriodReset;
using snowflake::PeriodRule;

namespace {

constexpr std::int64_t kHour = 3'600'000;

PeriodRule rule(PeriodReset reset, const char* zone) {
  auto made = PeriodRule::make(reset, zone);
  REQUIRE(made.has_value());
  return *made;
}

// 2026-11-26T12:00:00Z
constexpr std::int64_t kNov26Noon = 1'795'694'400'000;

}  // namespace

TEST_CASE("a daily period in Berlin is the local date, bounded by local midnights", "[period]") {
  const auto berlin = rule(PeriodReset::daily, "Europe/Berlin");
  const Period p = berlin.period_at(kNov26Noon);
  CHECK(p.key == "2026-11-26");
  CHECK(p.year == 2026);
  CHECK(p.month == 11);
  CHECK(p.day == 26);
  CHECK(p.begins_ms == kNov26Noon - 13 * kHour);  // 23:00Z the day before (UTC+1)
  CHECK(p.next_begins_ms == p.begins_ms + 24 * kHour);
  CHECK(p.ends_ms == p.next_begins_ms);
  // The last millisecond is still the 26th; the next one is the 27th.
  CHECK(berlin.period_at(p.next_begins_ms - 1).key == "2026-11-26");
  CHECK(berlin.period_at(p.next_begins_ms).key == "2026-11-27");
  CHECK(berlin.next_after(p) == berlin.period_at(p.next_begins_ms));
}

TEST_CASE("DST days are 23 and 25 hours long, 23.5 and 24.5 at Lord Howe", "[period]") {
  const auto berlin = rule(PeriodReset::daily, "Europe/Berlin");
  // 2026-03-29 and 2026-10-25: Berlin's clocks go forward, then back.
  const auto spring = berlin.period_at(1'774'785'600'000);  // 2026-03-29T12:00Z
  CHECK(spring.key == "2026-03-29");
  CHECK(spring.next_begins_ms - spring.begins_ms == 23 * kHour);
  const auto autumn = berlin.period_at(1'792'929'600'000);  // 2026-10-25T12:00Z
  CHECK(autumn.key == "2026-10-25");
  CHECK(autumn.next_begins_ms - autumn.begins_ms == 25 * kHour);

  const auto lord_howe = rule(PeriodReset::daily, "Australia/Lord_Howe");
  const auto april = lord_howe.period_at(1'775'390'400'000);  // 2026-04-05T12:00Z
  CHECK(april.key == "2026-04-05");
  CHECK(april.next_begins_ms - april.begins_ms == 24 * kHour + kHour / 2);
  const auto october = lord_howe.period_at(1'791'115'200'000);  // 2026-10-04T12:00Z
  CHECK(october.key == "2026-10-04");
  CHECK(october.next_begins_ms - october.begins_ms == 23 * kHour + kHour / 2);
}

TEST_CASE("where midnight is skipped the day begins at the step", "[period]") {
  // Havana, 2026-03-08: 23:59:59 -05:00 is followed by 01:00:00 -04:00.
  const auto havana = rule(PeriodReset::daily, "America/Havana");
  const auto day = havana.period_at(1'772'928'000'000 + 12 * kHour);  // 2026-03-08T12:00Z
  CHECK(day.key == "2026-03-08");
  CHECK(day.begins_ms == 1'772'946'000'000);  // 05:00Z: 00:00 -05:00 and 01:00 -04:00 at once
  CHECK(havana.period_at(day.begins_ms - 1).key == "2026-03-07");
  CHECK(day.next_begins_ms - day.begins_ms == 23 * kHour);
}

TEST_CASE("monthly and yearly periods, and a rule that never resets", "[period]") {
  const auto tokyo_month = rule(PeriodReset::monthly, "Asia/Tokyo");
  // 2026-11-30T15:00Z is 2026-12-01T00:00 in Tokyo.
  const auto december = tokyo_month.period_at(1'796'050'800'000);
  CHECK(december.key == "2026-12");
  CHECK(december.day == 0);
  CHECK(december.begins_ms == 1'796'050'800'000);
  CHECK(tokyo_month.period_at(december.begins_ms - 1).key == "2026-11");
  CHECK(tokyo_month.next_after(december).key == "2027-01");

  const auto shanghai_year = rule(PeriodReset::yearly, "Asia/Shanghai");
  const auto year = shanghai_year.period_at(kNov26Noon);
  CHECK(year.key == "2026");
  CHECK(year.month == 0);
  CHECK(shanghai_year.next_after(year).key == "2027");
  CHECK(shanghai_year.next_after(year).begins_ms == year.next_begins_ms);

  const PeriodRule never;
  const auto one = never.period_at(kNov26Noon);
  CHECK(one.key.empty());
  CHECK(one.next_begins_ms == INT64_MAX);
  CHECK(never.next_after(one) == one);
}

TEST_CASE("a zone must be a name of this machine's tzdata, never a path", "[period]") {
  for (const char* good : {"UTC", "Europe/Berlin", "Etc/GMT+5", "America/Argentina/Buenos_Aires"}) {
    INFO(good);
    CHECK(PeriodRule::make(PeriodReset::daily, good).has_value());
  }
  for (const char* bad :
       {"", "Mars/Olympus_Mons", "Europe", "Europe/", "/etc/localtime", "../etc/passwd",
        "Europe//Berlin", "localtime", "Europe/Berlin ", "zone.tab"}) {
    INFO(bad);
    CHECK_FALSE(PeriodRule::make(PeriodReset::daily, bad).has_value());
  }
  CHECK(snowflake::parse_period_reset("daily") == PeriodReset::daily);
  CHECK(snowflake::parse_period_reset("Daily") == std::nullopt);
  CHECK(snowflake::parse_period_reset("") == std::nullopt);
}

TEST_CASE("a period key is a real date in the reset's shape", "[period]") {
  using snowflake::is_period_key;
  CHECK(is_period_key(PeriodReset::daily, "2026-11-26"));
  CHECK(is_period_key(PeriodReset::daily, "2028-02-29"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026-02-29"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026-13-01"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026-11-00"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026-11-2x"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026/11/26"));
  CHECK_FALSE(is_period_key(PeriodReset::daily, "2026-11"));
  CHECK(is_period_key(PeriodReset::monthly, "2026-11"));
  CHECK_FALSE(is_period_key(PeriodReset::monthly, "2026-00"));
  CHECK(is_period_key(PeriodReset::yearly, "2026"));
  CHECK_FALSE(is_period_key(PeriodReset::yearly, "0000"));
  CHECK_FALSE(is_period_key(PeriodReset::yearly, "-202"));
  CHECK_FALSE(is_period_key(PeriodReset::none, ""));
  // Every key PeriodRule makes is one.
  const auto berlin = rule(PeriodReset::daily, "Europe/Berlin");
  CHECK(is_period_key(PeriodReset::daily, berlin.period_at(kNov26Noon).key));
}

TEST_CASE("a period is found again from its key, DST days and skipped midnights included",
          "[period]") {
  const auto berlin = rule(PeriodReset::daily, "Europe/Berlin");
  const Period nov26 = berlin.period_at(kNov26Noon);
  CHECK(berlin.period_of_key("2026-11-26") == nov26);
  // The 23-hour day, and the day a zone skips its midnight (begins at 01:00).
  const Period short_day = *berlin.period_of_key("2026-03-29");
  CHECK(short_day.next_begins_ms - short_day.begins_ms == 23 * kHour);
  CHECK(berlin.period_at(short_day.begins_ms) == short_day);
  const auto havana = rule(PeriodReset::daily, "America/Havana");
  const Period skipped = *havana.period_of_key("2026-03-08");
  CHECK(havana.period_at(skipped.begins_ms) == skipped);
  CHECK(havana.period_at(skipped.begins_ms - 1).key == "2026-03-07");
  const auto months = rule(PeriodReset::monthly, "UTC");
  CHECK(months.period_of_key("2026-02")->next_begins_ms ==
        months.period_of_key("2026-03")->begins_ms);
  CHECK(rule(PeriodReset::yearly, "Asia/Shanghai").period_of_key("2027")->key == "2027");
  // Not a key of the rule: another shape, a date that is not.
  CHECK_FALSE(berlin.period_of_key("2026-11"));
  CHECK_FALSE(berlin.period_of_key("2026-02-30"));
  CHECK_FALSE(months.period_of_key("2026-11-26"));
  CHECK_FALSE(PeriodRule().period_of_key(""));
}
