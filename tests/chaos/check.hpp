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
//                  floor_raise faults);
//   slow_reclaim   the worker ID of a daemon killed (kill -9) while serving
//                  not served again (by its next run or by another daemon)
//                  within the ReclaimBound after the kill, where no other
//                  fault came between (check_reclaim.cpp).
// Answers of GET /seq/<tag> are checked by rules of their own, per tag
// (check_sequences.cpp):
//   seq_duplicate       a number of the tag handed out twice;
//   seq_below_start     a number below the tag's first (`seq create --start`);
//   seq_below_raise     a number at or below a floor in an answer asked for
//                       after `snowflaked seq raise` exited 0 (seq_raise faults);
//   seq_not_increasing  one daemon run's numbers of the tag going down;
//   seq_out_of_order    a strict tag's number not above one that any answer
//                       received before its request was sent carried
//                       (real-time order across daemons: check_order.cpp);
//   bad_answer          as for IDs (404 included: every tag asked for exists,
//                       but while a zk_wipe has taken it, until the runbook
//                       made it again).
// With the fault schedule it also reports figures: availability of each
// daemon while no fault touched it, time from a fault's end to serving
// again, how worker IDs passed between owners, and per sequence how much was
// served, outside the daemon's own faults and while ZooKeeper was down.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "history.hpp"
#include "snowflake/ids/layout.hpp"

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
  // Per kill of a serving daemon: seconds until its worker ID was served
  // again by another run (the run's end, if never); of them, how many had
  // no other fault in their window and so were held to the bound.
  std::vector<double> reclaim_s;
  int reclaims_quiet = 0;
  int floors_raised = 0;     // migration floors in the schedule
  int floors_confirmed = 0;  // of them, confirmed by `pool floor` (exit 0)

  struct Sequence {
    std::uint64_t start = 0;       // its first number, as created
    std::uint64_t numbers = 0;     // handed out, duplicates included
    std::uint64_t duplicates = 0;  // numbers handed out more than once (each extra time)
    std::uint64_t lowest = UINT64_MAX;
    std::uint64_t highest = 0;
    // Asked outside the daemon's own faults; of them, while a ZooKeeper
    // server was killed or paused (and nothing else touched that daemon).
    std::uint64_t asked = 0, served = 0;
    std::uint64_t asked_zk_down = 0, served_zk_down = 0;
    // A strict tag's: answers' pairs (one received before the other was
    // sent) whose real-time order was checked (check_real_time_order).
    std::uint64_t order_pairs = 0;
    int raises = 0;            // seq_raise faults on it
    int raises_confirmed = 0;  // of them, confirmed by `seq raise` (exit 0)
  };
  std::map<std::string, Sequence> sequences;  // by tag

  bool ok() const { return violations_by_rule.empty(); }
  // Counts a broken rule; keeps the first few examples of each.
  void violate(const std::string& rule, const std::string& detail);
};

// How soon a killed daemon's worker ID must serve again: the kill's own
// down time plus base_ms (the session's end, reclaim_after_ms, a heartbeat,
// a start); held only where no other fault began or lasted from before_ms
// ahead of the kill to the bound. base_ms 0: measured, never held.
struct ReclaimBound {
  std::int64_t base_ms = 0;
  std::int64_t before_ms = 0;
};

// The 503 codes docs/api.md documents (docs/monitoring.md#runbook-the-503-codes).
bool is_documented_refusal(const std::string& code);

CheckReport check(const History& history, const std::vector<Fault>& schedule,
                  const IdLayout& layout, const ReclaimBound& reclaim = {});
// The reclaim figures and the slow_reclaim rule (part of check()).
void check_reclaims(const History& history, const std::vector<Fault>& schedule,
                    const IdLayout& layout, const ReclaimBound& bound, CheckReport& report);
// The sequence rules and figures (part of check() and to_text()).
void check_sequences(const History& history, const std::vector<Fault>& schedule,
                     CheckReport& report);
std::string sequences_text(const CheckReport& report);
// seq_out_of_order: for a tag whose order is strict, a number not above
// every number of an answer received before its request was sent, whichever
// daemons answered (check_order.cpp); counts the pairs it checked.
void check_real_time_order(const History& history, const std::string& tag, CheckReport& report);
// "d0 run 2 (sent ..., received ...)", for a violation's detail.
std::string who(const Answer& a);
// Numbers given by one answer: [first, last] of answer `answer`.
struct Span {
  std::uint64_t first;
  std::uint64_t last;
  std::size_t answer;
};
// Over `spans` (any order): each number given more than once is a `rule`
// violation ("<what> 5..7 issued twice: to ... and to ..."). Returns the
// numbers given in all and how many of them were extra times.
struct Overlaps {
  std::uint64_t given = 0;
  std::uint64_t duplicates = 0;
};
Overlaps find_overlaps(const History& h, std::vector<Span> spans, const std::string& rule,
                       const std::string& what, CheckReport& r);
// Within each group of answers (one daemon run's IDs of one worker ID, or
// its numbers of one sequence), an answer sent after another was received
// carries only higher numbers; else a `rule` violation ("<who> gave <what>
// N, not above ..."). Keyed by daemon, run and what the numbers are.
using RisingGroups = std::map<std::tuple<int, int, std::string>, std::vector<std::size_t>>;
void check_rising(const History& h, const RisingGroups& groups, const std::string& rule,
                  CheckReport& r);
std::string to_text(const CheckReport& report);

}  // namespace snowflake::chaos
