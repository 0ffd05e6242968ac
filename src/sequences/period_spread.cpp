#include "snowflake/sequences/period_spread.hpp"

#include <algorithm>
#include <functional>
#include <string>

namespace snowflake {

namespace {

// splitmix64's finaliser: std::hash of a string may keep structure of its
// input in the low bits; the point must not follow the run names' pattern.
std::uint64_t mixed(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A point in [low, high], fixed for this run and period.
std::int64_t point_in(std::string_view run, std::string_view period, std::string_view what,
                      std::int64_t low, std::int64_t high) {
  std::string key;
  key.reserve(run.size() + period.size() + what.size() + 2);
  key.append(run).append(1, '\n').append(period).append(1, '\n').append(what);
  const std::uint64_t h = mixed(std::hash<std::string>{}(key));
  return low + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(high - low + 1));
}

}  // namespace

std::int64_t period_lead_ms(std::string_view run, std::string_view period) {
  return point_in(run, period, "lead", kPeriodLeadMinMs, kPeriodLeadMaxMs);
}

std::int64_t let_go_margin_ms(std::string_view run, std::string_view period,
                              std::int64_t max_skew_ms) {
  const std::int64_t room = kPeriodRemovalAfterMs - 1 - std::max<std::int64_t>(0, max_skew_ms);
  const std::int64_t high = std::clamp(room, kLetGoMarginMinMs, kLetGoMarginMaxMs);
  return point_in(run, period, "let go", kLetGoMarginMinMs, high);
}

}  // namespace snowflake
