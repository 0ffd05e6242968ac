// A sequence's template: what create accepts and refuses (the message names
// what is wrong), and what a number prints as in a period.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "snowflake/sequences/number_template.hpp"

using snowflake::NumberTemplate;
using snowflake::Period;
using snowflake::PeriodReset;

namespace {

Period day(int y, int m, int d) {
  Period p;
  p.year = y;
  p.month = m;
  p.day = d;
  return p;
}

NumberTemplate parsed(const char* text, PeriodReset reset) {
  auto t = NumberTemplate::parse(text, reset);
  INFO(text);
  REQUIRE(t.has_value());
  return t.value();
}

std::string refusal(const char* text, PeriodReset reset) {
  auto t = NumberTemplate::parse(text, reset);
  INFO(text);
  REQUIRE_FALSE(t.has_value());
  return t.error();
}

}  // namespace

TEST_CASE("an invoice template prints the period's date and the padded number", "[template]") {
  const auto invoice = parsed("INV-{yyyy}{MM}{dd}-{n:06}", PeriodReset::daily);
  const auto filled = invoice.fill(day(2026, 11, 26));
  CHECK(filled.before == "INV-20261126-");
  CHECK(filled.after.empty());
  CHECK(filled.format(123) == "INV-20261126-000123");
  CHECK(filled.format(0) == "INV-20261126-000000");
  CHECK(filled.format(999999) == "INV-20261126-999999");
  CHECK(invoice.widest() == 999999);
  CHECK(invoice.width() == 6);
  CHECK(invoice.text() == "INV-{yyyy}{MM}{dd}-{n:06}");

  const auto short_year = parsed("{yy}/{MM}/{dd}#{n}.x", PeriodReset::daily);
  CHECK(short_year.fill(day(2005, 1, 9)).format(7) == "05/01/09#7.x");
  CHECK(short_year.widest() == INT64_MAX - 1);

  const auto monthly = parsed("R{yyyy}-{MM}/{n:03}", PeriodReset::monthly);
  CHECK(monthly.fill(day(2026, 2, 0)).format(5) == "R2026-02/005");
  const auto yearly = parsed("{n:02}@{yy}", PeriodReset::yearly);
  CHECK(yearly.fill(day(2026, 0, 0)).format(123) == "123@26");  // wider than W: never handed out
  CHECK(yearly.widest() == 99);
}

TEST_CASE("a template without a reset holds the number alone, and braces escape", "[template]") {
  const auto order = parsed("ORD-{n:08}", PeriodReset::none);
  CHECK(order.fill(Period{}).format(42) == "ORD-00000042");
  const auto braces = parsed("{{{n}}}", PeriodReset::none);
  CHECK(braces.fill(Period{}).format(9) == "{9}");
  const NumberTemplate plain;
  CHECK(plain.text() == "{n}");
  CHECK(plain.fill(Period{}).format(INT64_MAX - 1) == "9223372036854775806");
  const auto widest = parsed("{n:019}", PeriodReset::none);
  CHECK(widest.widest() == INT64_MAX - 1);
  CHECK(widest.fill(Period{}).format(1) == "0000000000000000001");
  CHECK(parsed("{n:018}", PeriodReset::none).widest() == 999'999'999'999'999'999);
  CHECK(parsed("{n:01}", PeriodReset::none).widest() == 9);
}

TEST_CASE("templates that could print two numbers alike, or cannot print, are refused",
          "[template]") {
  using R = PeriodReset;
  CHECK_THAT(refusal("INV-{n:06}", R::daily), Catch::Contains("must name the year"));
  CHECK_THAT(refusal("{yyyy}{dd}-{n}", R::daily), Catch::Contains("{MM}"));
  CHECK_THAT(refusal("{MM}-{n}", R::monthly), Catch::Contains("the year"));
  CHECK_THAT(refusal("{yyyy}{MM}{dd}-{n}", R::monthly), Catch::Contains("{dd} in a monthly"));
  CHECK_THAT(refusal("{yyyy}{MM}-{n}", R::yearly), Catch::Contains("{MM} in a yearly"));
  CHECK_THAT(refusal("{yyyy}-{n}", R::none),
             Catch::Contains("the year in a sequence that never restarts: a date needs"));
  CHECK_THAT(
      refusal("{dd}-{n}", R::none),
      Catch::Contains("{dd} in a sequence that never restarts, which does not restart each day"));
  CHECK_THAT(refusal("INV-{yyyy}", R::yearly), Catch::Contains("no {n}"));
  CHECK_THAT(refusal("{n}-{n}", R::none), Catch::Contains("more than once"));
  CHECK_THAT(refusal("{yyyy}-{q}-{n}", R::yearly), Catch::Contains("unknown token {q} at 7"));
  CHECK_THAT(refusal("{N}", R::none), Catch::Contains("unknown token {N}"));
  CHECK_THAT(refusal("{n:6}", R::none), Catch::Contains("unknown token {n:6}"));
  CHECK_THAT(refusal("{n:00}", R::none), Catch::Contains("1 to 19"));
  CHECK_THAT(refusal("{n:020}", R::none), Catch::Contains("1 to 19"));
  CHECK_THAT(refusal("{n:006}", R::none), Catch::Contains("1 to 19"));
  CHECK_THAT(refusal("{n:0x}", R::none), Catch::Contains("1 to 19"));
  CHECK_THAT(refusal("A {n}", R::none), Catch::Contains("character 1"));
  CHECK_THAT(refusal("A\"{n}", R::none), Catch::Contains("character 1"));
  CHECK_THAT(refusal("{n", R::none), Catch::Contains("never closed"));
  CHECK_THAT(refusal("{n}}", R::none), Catch::Contains("lone }"));
  CHECK_THAT(refusal("", R::none), Catch::Contains("1 to 64 characters"));
  CHECK_THAT(refusal(std::string(60, 'x').append("{n}xx").c_str(), R::none),
             Catch::Contains("1 to 64"));
  CHECK_THAT(refusal("é{n}", R::none), Catch::Contains("template 'é{n}'"));
}
