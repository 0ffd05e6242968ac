#pragma once
// The checker of a chaos run (or of any log of IDs): it reads every answer
// and fails on
//   duplicate      an ID issued twice (naming the two answers);
//   borrowed_time  an ID stamped later than the daemon's wall clock when the
//                  answer arrived;
//   not_increasing one daemon run's IDs of one worker ID going down (an answer
//                  sent after another was received must be above it);
//   bad_answer     anything but a 200, no answer at all, or a 503 with a
//                  documented code and Retry-After;
//   below_floor    an ID at or below a migration floor in an answer asked
//                  for after `snowflaked pool floor` exited 0 (the schedule's
//                  floor_raise faults).
// With the fault schedule it also reports figures: availability of each
// daemon while no fault touched it, time from a fault's end to serving
// again, and how worker IDs passed between owners.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "history.hpp"
#include "snowflake/id_layout.hpp"

namespace snowflake::chaos {

struct Violation {
  std::string rule;
  std::string detail;
};

struct CheckReport {
  std::uint64_t answers = 0;
  std::uint64_t ids = 0;                          // issued, duplicates included
  std::uint64_t duplicates = 0;                   // IDs issued more than once (each extra time)
  std::map<std::string, std::uint64_t> refusals;  // by code; "no_answer" for none at all
  std::map<std::string, std::uint64_t> violations_by_rule;
  std::vector<Violation> examples;  // the first few of each rule

  struct Availability {
    std::uint64_t asked = 0;
    std::uint64_t served = 0;
    std::uint64_t standby =
        0;  // not_ready while every worker ID was in use: expected, not counted in asked
  };
  std::map<int, Availability> availability;  // per daemon, outside its faults
  std::vector<double> recovery_s;            // per fault that ended: to the next 200
  std::string slowest_recovery;
  struct Reuse {
    int handovers = 0;                    // owner changes, in ID order
    std::int64_t min_gap_ms = INT64_MAX;  // between one owner's last stamp and the next's first
  };
  std::map<std::uint32_t, Reuse> reuse;  // per worker ID
  int floors_raised = 0;                 // migration floors in the schedule
  int floors_confirmed = 0;              // of them, confirmed by `pool floor` (exit 0)

  bool ok() const { return violations_by_rule.empty(); }
};

// The 503 codes docs/api.md documents (docs/monitoring.md#runbook-the-503-codes).
bool is_documented_refusal(const std::string& code);

CheckReport check(const History& history, const std::vector<Fault>& schedule,
                  const IdLayout& layout);
std::string to_text(const CheckReport& report);

}  // namespace snowflake::chaos
