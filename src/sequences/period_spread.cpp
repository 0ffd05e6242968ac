#include "snowflake/sequences/period_spread.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "snowflake/base/mix64.hpp"

namespace snowflake {

namespace {

// A point in [low, high], fixed for this run and period.
std::int64_t point_in(std::string_view run, std::string_view period, std::string_view what,
                      std::int64_t low, std::int64_t high) {
  std::string key;
  key.reserve(run.size() + period.size() + what.size() + 2);
  key.append(run).append(1, '\n').append(period).append(1, '\n').append(what);
  // std::hash of a string may keep its input's structure in the low bits:
  // mixed, the point does not follow the run names' pattern.
  const std::uint64_t h = splitmix64_finalize(std::hash<std::string>{}(key));
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
