#pragma once
// A sequence's node, <root>/sequences/<tag>, and the pure decisions made on
// it: which range a take writes, whether a take whose reply was lost was
// applied, what a clean stop may give back. The ZooKeeper calls around them
// are in sequence_ranges.hpp.
//
//   {"next": 5000, "step": 1000, "floor": 0,
//    "takes": [{"owner": "<run>-<n>", "start": 4000, "end": 5000}, ...]}
//
// and, for a sequence made with a template or a bound (`seq create
// --template 'ORD-{n:08}' --max N`), "template" (sequences/number_template.hpp)
// and "max" (its largest number); for a sequence that restarts each period
// (`seq create --reset daily --time-zone Europe/Berlin`), this node is its
// definition, "reset", "time_zone", "retention_s" and "removed_through", and
// each period's numbers are in a node of its own, <root>/sequences/<tag>@<key>
// (period_tag()), made from the definition's next (its start), step and max;
// and "frozen": true while the cluster's history is in doubt
// (ZooKeeper lost or rolled back some of it: cluster_identity.hpp): nothing is taken, given back or
// handed out until `seq raise` lifts the floor past what was handed out, which thaws it.
//
// `next` is the first number no daemon has taken; each take moves it up with
// one write conditional on the version read. `takes` keeps the last few takes
// with the nonce of the attempt that made each: a daemon whose reply was lost
// finds its own nonce there, or counts the range as lost. Two daemons that
// read the same node compute the same range, so the data's equality with what
// one wrote proves nothing; the nonce, unique per attempt, does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/sequences/period.hpp"

namespace snowflake::coord {

// How many takes a node remembers: a daemon whose reply was lost looks for
// its nonce among them. More takes than this between the lost write and the
// re-read, and the range counts as lost (a gap, never a duplicate).
inline constexpr std::size_t kSequenceTakesKept = 16;

// The end of a sequence's numbers, exclusive (ranges are [start, end) in
// int64): the largest number handed out is kSequenceMax - 1, which JSON and
// every client can carry.
inline constexpr std::int64_t kSequenceMax = INT64_MAX;

struct SequenceTake {
  std::string owner;       // the nonce of the attempt: "<run's instance>-<counter>"
  std::int64_t start = 0;  // [start, end)
  std::int64_t end = 0;
  bool operator==(const SequenceTake&) const = default;
};

struct SequenceNode {
  std::int64_t next = 1;              // the first number never taken
  std::int64_t step = 1;              // the tag's smallest range (its `seq create --step`)
  std::int64_t floor = 0;             // `seq raise --above`: never a number <= floor
  std::vector<SequenceTake> takes{};  // newest last, at most kSequenceTakesKept
  bool frozen = false;                // until a raise: the numbers handed out are unknown
  // How its numbers are printed ('' : as they are) and where they end,
  // exclusive (--max + 1): fixed at create.
  std::string number_template{};
  std::int64_t end = kSequenceMax;
  // A definition: the period its numbers restart each, in which zone; how
  // long a period's node is kept once it is over; the newest period whose
  // node was removed ("": none), which no daemon may make again.
  PeriodReset reset = PeriodReset::none;
  std::string time_zone{};
  std::int64_t retention_s = 0;
  std::string removed_through{};
  // `seq create --order strict`: one owner hands out, in real-time order
  // across the cluster ("order": "strict"; absent: per-daemon, as before).
  bool strict = false;
  bool operator==(const SequenceNode&) const = default;
};

// The name of period `key`'s node of the sequence `tag`: "<tag>@<key>" (no
// tag has an '@', so it is never another sequence's).
std::string period_tag(std::string_view tag, std::string_view key);

// A period's first node: the definition's start (its next), step and max.
SequenceNode first_of_period(const SequenceNode& definition);

// What a period's removal waits for beyond the skew bound: a daemon's clock
// is checked against ZooKeeper's only now and then, so it may have drifted
// past the bound since its last check by this much at most.
inline constexpr std::int64_t kPeriodRemovalMarginMs = 60'000;
// The ZooKeeper time from which period `p`'s node may be removed: its
// last instant (ends_ms) plus the retention the definition asks for, and
// never less than the skew bound plus the margin: by then no daemon whose
// clock is within the bound can be in the period (model/period.pml,
// property 10). INT64_MAX for a period that never ends.
std::int64_t removable_after_ms(const Period& p, std::int64_t retention_s,
                                std::int64_t max_skew_ms) noexcept;

std::string encode(const SequenceNode& n);
// The node's floor child, <root>/sequences/<tag>/floor: {"floor": N, "frozen": B},
// what a holder must see change (a take changes neither).
std::string encode_floor(const SequenceNode& n);
// nullopt: not a sequence node (or one whose numbers do not add up).
std::optional<SequenceNode> decode_sequence(std::string_view text);

// The first number a take would start at: above the floor, and not below `next`.
std::int64_t first_untaken(const SequenceNode& node) noexcept;
// No number is left to take: `next` reached the node's end (kSequenceMax, or
// its --max + 1), or the floor was raised to the end - 1 or above (`seq raise
// --above 9223372036854775807` retires a tag). A clean stop's give-back can
// make room again.
bool is_exhausted(const SequenceNode& node) noexcept;

// Why a take cannot be planned.
enum class TakeRefusal {
  version_wrapped,  // the version read is -1, which ZooKeeper reads as "any version"
  exhausted,        // no number left below the node's end
  frozen,           // the cluster's history is in doubt: seq raise first
  periodic,         // a definition: its numbers are in its periods' nodes
  strict,           // a strict sequence, and the taker not its owner (strict_owner.hpp)
};
std::string_view to_string(TakeRefusal r) noexcept;

struct TakePlan {
  SequenceNode after;  // what to write, conditional on the version read
  SequenceTake range;  // what the write makes ours
};

// A take of `count` numbers (>= 1) by attempt `owner` from `node` as read at
// `version`: [max(next, floor + 1), + max(count, step)), fewer at its end.
// A strict sequence's numbers are taken by its owner only (`strict_owner`).
struct TakeOutcome {
  std::optional<TakePlan> plan;
  std::optional<TakeRefusal> refusal;
};
TakeOutcome plan_take(const SequenceNode& node, std::int32_t version, const std::string& owner,
                      std::int64_t count, bool strict_owner = false);

// After a lost reply: the range the attempt `owner` took, if the node shows
// that its write was applied; nullopt: not applied, or no longer known.
std::optional<SequenceTake> find_take(const SequenceNode& node, std::string_view owner);

// The nonce of attempt `n` of run `run` (the daemon's instance token).
std::string take_nonce(std::string_view run, std::uint64_t n);

// A clean stop gives back [first_unused, next): allowed when the newest takes,
// back to one holding first_unused, are all run `run`'s and adjoin (nobody
// took between them), and the sequence is not frozen. The node with `next` moved back, to write
// conditional on the version read; nullopt: someone took after us, the rest stays a gap.
std::optional<SequenceNode> plan_give_back(const SequenceNode& node, std::string_view run,
                                           std::int64_t first_unused);

// `seq raise --above`: the node with the floor raised (it never falls),
// `next` above it, and thawed.
SequenceNode raised(const SequenceNode& node, std::int64_t above);

// Frozen, with the floor raised to `above` (a daemon that held up to there
// says so when it freezes a sequence it finds behind its own ranges).
SequenceNode freeze(const SequenceNode& node, std::int64_t above = 0);

}  // namespace snowflake::coord
