#include "snowflake/base/time_format.hpp"

#include <charconv>
#include <chrono>

#include <fmt/format.h>

namespace snowflake {

namespace {

constexpr std::int64_t kMsPerDay = 86'400'000;

// Floor division, so instants before 1970 land on the right day.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Reads exactly `width` decimal digits at text[pos].
std::optional<int> read_digits(std::string_view text, std::size_t pos, std::size_t width) {
  if (pos + width > text.size()) return std::nullopt;
  int value = 0;
  const char* first = text.data() + pos;
  const char* last = first + width;
  for (const char* p = first; p != last; ++p) {
    if (*p < '0' || *p > '9') return std::nullopt;
  }
  std::from_chars(first, last, value);
  return value;
}

}  // namespace

std::string format_iso8601_ms(std::int64_t unix_ms) {
  using namespace std::chrono;
  const std::int64_t day = floor_div(unix_ms, kMsPerDay);
  const std::int64_t ms_of_day = unix_ms - day * kMsPerDay;
  const year_month_day ymd{sys_days{days{day}}};
  const auto hours = ms_of_day / 3'600'000;
  const auto minutes = ms_of_day / 60'000 % 60;
  const auto seconds = ms_of_day / 1000 % 60;
  const auto millis = ms_of_day % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hours,
                     minutes, seconds, millis);
}

std::optional<std::int64_t> parse_iso8601_ms(std::string_view text) {
  using namespace std::chrono;
  // Fixed positions: YYYY-MM-DDTHH:MM:SS then optional .fff, then Z.
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const auto y = read_digits(text, 0, 4), mo = read_digits(text, 5, 2), d = read_digits(text, 8, 2),
             h = read_digits(text, 11, 2), mi = read_digits(text, 14, 2),
             s = read_digits(text, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s) return std::nullopt;
  int millis = 0;
  std::size_t pos = 19;
  if (text[pos] == '.') {
    const auto frac = read_digits(text, pos + 1, 3);
    if (!frac) return std::nullopt;
    millis = *frac;
    pos += 4;
  }
  if (pos + 1 != text.size() || text[pos] != 'Z') return std::nullopt;
  const year_month_day ymd{year{*y}, month{static_cast<unsigned>(*mo)},
                           day{static_cast<unsigned>(*d)}};
  if (!ymd.ok() || *h > 23 || *mi > 59 || *s > 59) return std::nullopt;
  const std::int64_t days_since_epoch = sys_days{ymd}.time_since_epoch().count();
  return days_since_epoch * kMsPerDay + *h * 3'600'000LL + *mi * 60'000LL + *s * 1000LL + millis;
}

}  // namespace snowflake
