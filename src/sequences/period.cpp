#include "snowflake/sequences/period.hpp"

#include <chrono>

#include <cctz/civil_time.h>
#include <fmt/format.h>

namespace snowflake {
namespace {

using Millis = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

std::int64_t to_ms(const cctz::time_point<cctz::seconds>& tp) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(tp.time_since_epoch()).count();
}

// The first instant whose local time is `local` or later: where the civil
// time was skipped, the step itself; where it repeats, its first occurrence.
std::int64_t first_instant(const cctz::time_zone& zone, const cctz::civil_second& local) {
  const auto found = zone.lookup(local);
  return to_ms(found.kind == cctz::time_zone::civil_lookup::SKIPPED ? found.trans : found.pre);
}

// The end of the last stretch of time whose local time is before `local`:
// the second occurrence of the second before it, and a second on, where a
// step back repeats that second (the previous day comes back); where a step
// forward skips it, the step.
std::int64_t last_instant_before(const cctz::time_zone& zone, const cctz::civil_second& local) {
  const auto found = zone.lookup(local - 1);
  if (found.kind == cctz::time_zone::civil_lookup::SKIPPED) return to_ms(found.trans);
  return to_ms(found.post) + 1000;
}

std::string key_of(PeriodReset reset, const cctz::civil_second& start) {
  const auto y = static_cast<int>(start.year());
  switch (reset) {
    case PeriodReset::daily:
      return fmt::format("{:04}-{:02}-{:02}", y, start.month(), start.day());
    case PeriodReset::monthly:
      return fmt::format("{:04}-{:02}", y, start.month());
    case PeriodReset::yearly:
      return fmt::format("{:04}", y);
    case PeriodReset::none:
      break;
  }
  return {};
}

}  // namespace

std::string_view to_string(PeriodReset r) noexcept {
  switch (r) {
    case PeriodReset::none:
      return "none";
    case PeriodReset::daily:
      return "daily";
    case PeriodReset::monthly:
      return "monthly";
    case PeriodReset::yearly:
      return "yearly";
  }
  return "none";
}

std::optional<PeriodReset> parse_period_reset(std::string_view text) noexcept {
  for (auto r :
       {PeriodReset::none, PeriodReset::daily, PeriodReset::monthly, PeriodReset::yearly}) {
    if (text == to_string(r)) return r;
  }
  return std::nullopt;
}

bool is_zone_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.back() == '/') return false;
  // Names of tzdata's tree that are not a zone every machine reads alike:
  // "localtime" (a link to the machine's own zone on Debian), "posixrules"
  // (a link to one zone, gone from newer tzdata), "Factory" (no zone at
  // all), and the posix/ and right/ copies (right/ counts leap seconds).
  for (std::string_view not_a_zone : {"localtime", "posixrules", "Factory"}) {
    if (name == not_a_zone) return false;
  }
  if (name.starts_with("posix/") || name.starts_with("right/")) return false;
  char previous = '/';
  for (char c : name) {
    const bool word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '+' || c == '-';
    if (!word && c != '/') return false;
    if (c == '/' && previous == '/') return false;  // an empty part
    previous = c;
  }
  return true;
}

bool is_period_key(PeriodReset reset, std::string_view key) noexcept {
  const std::size_t size = reset == PeriodReset::daily     ? 10
                           : reset == PeriodReset::monthly ? 7
                           : reset == PeriodReset::yearly  ? 4
                                                           : 0;
  if (size == 0 || key.size() != size) return false;
  // The digits at [at, at + count), or -1.
  const auto number = [key](std::size_t at, std::size_t count) {
    int n = 0;
    for (std::size_t i = at; i < at + count; ++i) {
      if (key[i] < '0' || key[i] > '9') return -1;
      n = n * 10 + (key[i] - '0');
    }
    return n;
  };
  const int year = number(0, 4);
  const int month = size < 7 ? 1 : key[4] == '-' ? number(5, 2) : -1;
  const int day = size < 10 ? 1 : key[7] == '-' ? number(8, 2) : -1;
  if (year < 1 || month < 1 || day < 1) return false;
  // A real date: cctz normalizes 2026-02-30 to March.
  const cctz::civil_day d(year, month, day);
  return d.year() == year && d.month() == month && d.day() == day;
}

std::optional<PeriodRule> PeriodRule::make(PeriodReset reset, std::string_view zone) {
  if (!is_zone_name(zone)) return std::nullopt;
  cctz::time_zone loaded;
  // load_time_zone reads "UTC" (and fixed offsets) without tzdata; every
  // other name must be a file of this machine's zoneinfo, or it fails.
  if (!cctz::load_time_zone(std::string(zone), &loaded)) return std::nullopt;
  return PeriodRule(reset, loaded, std::string(zone));
}

Period PeriodRule::period_of(const cctz::civil_second& local) const {
  Period p;
  if (reset_ == PeriodReset::none) return p;
  cctz::civil_second start;
  cctz::civil_second next;
  switch (reset_) {
    case PeriodReset::daily: {
      const cctz::civil_day d(local);
      start = cctz::civil_second(d);
      next = cctz::civil_second(d + 1);
      break;
    }
    case PeriodReset::monthly: {
      const cctz::civil_month m(local);
      start = cctz::civil_second(m);
      next = cctz::civil_second(m + 1);
      break;
    }
    default: {
      const cctz::civil_year y(local);
      start = cctz::civil_second(y);
      next = cctz::civil_second(y + 1);
      break;
    }
  }
  p.key = key_of(reset_, start);
  p.year = static_cast<int>(start.year());
  p.month = reset_ == PeriodReset::yearly ? 0 : start.month();
  p.day = reset_ == PeriodReset::daily ? start.day() : 0;
  p.begins_ms = first_instant(zone_, start);
  p.next_begins_ms = first_instant(zone_, next);
  p.ends_ms = last_instant_before(zone_, next);
  return p;
}

Period PeriodRule::period_at(std::int64_t unix_ms) const {
  if (reset_ == PeriodReset::none) return Period{};
  const Millis at{std::chrono::milliseconds(unix_ms)};
  return period_of(cctz::convert(at, zone_));
}

Period PeriodRule::next_after(const Period& p) const {
  if (reset_ == PeriodReset::none) return p;
  const cctz::civil_second start(p.year, reset_ == PeriodReset::yearly ? 1 : p.month,
                                 reset_ == PeriodReset::daily ? p.day : 1);
  switch (reset_) {
    case PeriodReset::daily:
      return period_of(cctz::civil_second(cctz::civil_day(start) + 1));
    case PeriodReset::monthly:
      return period_of(cctz::civil_second(cctz::civil_month(start) + 1));
    default:
      return period_of(cctz::civil_second(cctz::civil_year(start) + 1));
  }
}

std::optional<Period> PeriodRule::period_of_key(std::string_view key) const {
  if (!is_period_key(reset_, key)) return std::nullopt;
  const auto digits = [key](std::size_t at, std::size_t count) {
    int n = 0;
    for (std::size_t i = at; i < at + count; ++i) n = n * 10 + (key[i] - '0');
    return n;
  };
  const int month = key.size() >= 7 ? digits(5, 2) : 1;
  const int day = key.size() >= 10 ? digits(8, 2) : 1;
  return period_of(cctz::civil_second(digits(0, 4), month, day));
}

}  // namespace snowflake
