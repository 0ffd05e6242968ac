#pragma once
// A sequence that restarts each day, month or year (an order or invoice
// number): which period an instant falls in, in the sequence's own time
// zone, and where that period begins and ends. Pure but for reading the
// system's tzdata (through cctz) once per zone.
//
// A period is a civil date in the zone ("2026-11-26", "2026-11", "2026"),
// not a fixed length: a day is 23 or 25 hours on DST days (30 minutes off
// at Lord Howe), and where a zone's clock steps at midnight the day begins
// at the step (midnight skipped), or the previous day comes back for an hour
// after the next one began (midnight repeated). So a period has two ends:
//   next_begins_ms  the first instant of the next period: where a daemon
//                   switches, and before which it takes the next period's
//                   first range;
//   ends_ms         the last instant any clock can still fall in this period
//                   (after a repeated midnight: the second one), which is
//                   what a period's removal waits for.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <cctz/time_zone.h>

namespace snowflake {

enum class PeriodReset { none, daily, monthly, yearly };
std::string_view to_string(PeriodReset r) noexcept;
// "daily", "monthly", "yearly", "none"; nullopt for anything else.
std::optional<PeriodReset> parse_period_reset(std::string_view text) noexcept;

struct Period {
  std::string key;  // "2026-11-26", "2026-11", "2026"; "" when the sequence never resets
  int year = 0;     // the period's civil fields (0 where the reset has none)
  int month = 0;
  int day = 0;
  std::int64_t begins_ms = INT64_MIN;       // its first instant (UTC ms)
  std::int64_t next_begins_ms = INT64_MAX;  // the next period's first instant
  std::int64_t ends_ms = INT64_MAX;         // the last instant it can be current, exclusive
  bool operator==(const Period&) const = default;
};

// A time zone's name as tzdata spells it: "Europe/Berlin", "UTC",
// "Etc/GMT+5", "America/Argentina/Buenos_Aires". Letters, digits and
// "/_+-", no empty part, no "." (so never a path out of the zoneinfo tree),
// at most 64 characters; not "localtime", "posixrules", "Factory" nor under
// posix/ or right/ (not a zone every machine reads alike).
bool is_zone_name(std::string_view name) noexcept;

// A period's key as PeriodRule makes it for `reset`: "2026-11-26" (daily),
// "2026-11" (monthly), "2026" (yearly), a real date; false for none.
bool is_period_key(PeriodReset reset, std::string_view key) noexcept;

class PeriodRule {
 public:
  // nullopt: the zone is not a well-formed name or not in this machine's
  // tzdata (cctz would silently read it as UTC).
  static std::optional<PeriodRule> make(PeriodReset reset, std::string_view zone);
  // A rule that never resets (its one period has the key "").
  PeriodRule() = default;

  // The period `unix_ms` falls in.
  Period period_at(std::int64_t unix_ms) const;
  // The period after `p` (what a daemon prepares before p.next_begins_ms).
  Period next_after(const Period& p) const;
  // The period whose key is `key` (its node's name says it); nullopt: not
  // a key of this rule's periods.
  std::optional<Period> period_of_key(std::string_view key) const;

  PeriodReset reset() const noexcept { return reset_; }
  const std::string& zone() const noexcept { return zone_name_; }

 private:
  PeriodRule(PeriodReset reset, cctz::time_zone zone, std::string name)
      : reset_(reset), zone_(zone), zone_name_(std::move(name)) {}
  Period period_of(const cctz::civil_second& local) const;

  PeriodReset reset_ = PeriodReset::none;
  cctz::time_zone zone_ = cctz::utc_time_zone();
  std::string zone_name_ = "UTC";
};

}  // namespace snowflake
