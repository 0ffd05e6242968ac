// seq create --template, and every daemon reading it from the sequence's
// node: an accepted template prints only its literals, the period's fields
// and the number; two numbers, or one number in two periods, never print
// alike; and a number up to widest() is never cut or widened past W digits.
// The first byte picks the reset, the rest is the template.
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/sequences/number_template.hpp"

using snowflake::Period;

namespace {

Period period(int year, int month, int day) {
  Period p;
  p.year = year;
  p.month = month;
  p.day = day;
  return p;
}

// The period after `p` in the field the reset counts (a day, a month, a year).
Period next(snowflake::PeriodReset reset, Period p) {
  if (reset == snowflake::PeriodReset::daily) ++p.day;
  if (reset == snowflake::PeriodReset::monthly) ++p.month;
  if (reset == snowflake::PeriodReset::yearly) ++p.year;
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  const auto reset = static_cast<snowflake::PeriodReset>(data[0] % 4);
  const auto text = as_text(data + 1, size - 1);
  const auto parsed = snowflake::NumberTemplate::parse(text, reset);
  if (!parsed) {
    FUZZ_CHECK(parsed.error().find("template '") == 0, text);
    return 0;
  }
  const auto& t = parsed.value();
  FUZZ_CHECK(t.text() == text, text);
  const auto widest = t.widest();
  FUZZ_CHECK(widest >= 9 && widest < INT64_MAX, text);
  const Period today = period(2026, 11, 26);
  const auto filled = t.fill(today);
  const auto tomorrow = t.fill(next(reset, today));
  for (const std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, widest / 10 + 1, widest - 1, widest}) {
    const auto printed = filled.format(n);
    const auto digits = printed.size() - filled.before.size() - filled.after.size();
    FUZZ_CHECK(printed.size() <= snowflake::NumberTemplate::kMaxLength * 4 + 19, text);
    FUZZ_CHECK(digits == std::max<std::size_t>(t.width(), std::to_string(n).size()), text);
    FUZZ_CHECK(t.width() == 0 || digits == static_cast<std::size_t>(t.width()), text);
    FUZZ_CHECK(printed != filled.format(n == 0 ? 1 : n - 1), text);
    if (reset != snowflake::PeriodReset::none) FUZZ_CHECK(printed != tomorrow.format(n), text);
    for (char c : printed) FUZZ_CHECK(c > ' ' && c < 0x7f && c != '"' && c != '\\', text);
  }
  return 0;
}
