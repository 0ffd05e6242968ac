// Prints the periods PeriodRule finds, for tests/reference/period_keys.py to
// check against Python's zoneinfo (another reading of the same tzdata):
//
//   period_table ZONE RESET FROM_S TO_S STEP_S
//
// one line per instant from FROM_S to TO_S (unix seconds, TO_S excluded),
// STEP_S apart: "<unix_s> <key> <begins_ms> <next_begins_ms> <ends_ms>".
// Exit 2 if the zone or the reset is refused.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "snowflake/sequences/period.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: period_table ZONE RESET FROM_S TO_S STEP_S\n");
    return 2;
  }
  const auto reset = snowflake::parse_period_reset(argv[2]);
  if (!reset) return 2;
  const auto rule = snowflake::PeriodRule::make(*reset, argv[1]);
  if (!rule) {
    std::fprintf(stderr, "period_table: zone %s refused\n", argv[1]);
    return 2;
  }
  const std::int64_t from = std::strtoll(argv[3], nullptr, 10);
  const std::int64_t to = std::strtoll(argv[4], nullptr, 10);
  const std::int64_t step = std::strtoll(argv[5], nullptr, 10);
  if (step <= 0) return 2;
  for (std::int64_t s = from; s < to; s += step) {
    const auto p = rule->period_at(s * 1000);
    std::printf("%lld %s %lld %lld %lld\n", static_cast<long long>(s), p.key.c_str(),
                static_cast<long long>(p.begins_ms), static_cast<long long>(p.next_begins_ms),
                static_cast<long long>(p.ends_ms));
  }
  return 0;
}
