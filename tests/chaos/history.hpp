#pragma once
// The record of a chaos run, one JSON object a line, so that a failing run
// can be read, replayed and checked again:
//
//   history.jsonl   {"layout": {...}} first, then one line per answer:
//     {"d":0,"run":2,"c":1,"sent":<us>,"recv":<us>,"off":<ms>,"status":200,
//      "ids":[["<first id>",<count>],...]}          consecutive IDs as runs
//     {"d":0,"run":2,"c":1,"sent":..,"recv":..,"off":..,"status":503,
//      "error":"not_ready","retry_after":true}
//     "standby":true on a not_ready of a daemon that waits for a free worker
//     ID because the others hold them all (more daemons than the pool holds)
//     status 0: no answer at all (connection refused or cut)
//     "seq":"<tag>" on an answer of GET /seq/<tag>: its "ids" are the
//     sequence's numbers, not snowflake IDs
//   and, before the answers, {"sequences":{"<tag>":<first number>,...}}: the
//   sequences the load asks for, as `seq create` made them
//   schedule.jsonl  one line per fault: {"kind":"net_stall","target":"d1",
//                   "start":<us>,"end":<us>,"detail":"..."}; target "zk" or
//                   "zk2" for ZooKeeper servers, "cluster" for a migration
//                   floor (`snowflaked pool floor`), which adds
//                   "above_id":"<N>" and "confirmed":<us> (when the command
//                   exited 0; 0 if it did not); "seq_raise" adds "tag" too
//                   (`snowflaked seq raise <tag> --above N`)
//
// Times are the real (system) clock in microseconds since the Unix epoch;
// "off" is how far ahead of real time the daemon's own wall clock was, at
// most, while the request was out (faults move it).

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "snowflake/ids/layout.hpp"

namespace snowflake::chaos {

struct IdRun {
  std::uint64_t first = 0;
  std::uint32_t count = 0;
  std::uint64_t last() const { return first + count - 1; }
};

struct Answer {
  int daemon = -1;
  int run = -1;    // which start of that daemon (0, 1, ...)
  int client = 0;  // which client of that daemon
  std::int64_t sent_us = 0;
  std::int64_t received_us = 0;
  std::int64_t clock_offset_ms = 0;
  int status = 0;            // HTTP status; 0: no answer
  std::string error{};       // a refusal's code
  bool retry_after = false;  // a refusal carried Retry-After
  bool standby = false;      // not_ready because every worker ID is in use: by design
  std::vector<IdRun> ids{};  // a 200's IDs, in the order given
  std::string seq{};         // GET /seq/<seq>: ids are that sequence's numbers
};

struct Fault {
  std::string kind;    // net_stall, kill, clock_step, zk_pause, ...
  std::string target;  // "d3", "zk", "zk1", ...
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;  // == start_us for an instant fault
  std::string detail;
  // floor_raise: the ID the floor was set above, and when `pool floor`
  // exited 0 (0: it did not): from then on no ID <= above_id.
  std::uint64_t above_id = 0;
  std::int64_t confirmed_us = 0;
  // seq_raise: the sequence whose floor above_id is (`seq raise`).
  std::string tag{};
  // The daemon it touches directly; -1 for ZooKeeper and the floor (every daemon).
  int daemon() const;
};

// Runs of consecutive numbers, in the order given.
std::vector<IdRun> to_runs(const std::vector<std::uint64_t>& ids);

std::string to_json_line(const Answer& a);
std::string to_json_line(const Fault& f);
std::string layout_line(const LayoutSettings& layout);
// The sequences' first numbers, and which of them are strict.
std::string sequences_line(const std::map<std::string, std::uint64_t>& starts,
                           const std::set<std::string>& strict = {});

struct History {
  std::optional<LayoutSettings> layout;                  // from the first line, if it has one
  std::map<std::string, std::uint64_t> sequence_starts;  // tag: its first number
  std::set<std::string> strict_sequences;                // their real-time order is checked
  std::vector<Answer> answers;
};

// Reads a history file. Also takes a plain list of IDs (one decimal number
// a line, nothing else): each becomes a 200 answer of its own, so only the
// rules that need no times apply. Throws std::runtime_error naming the line.
History read_history(std::istream& in);
std::vector<Fault> read_schedule(std::istream& in);

}  // namespace snowflake::chaos
