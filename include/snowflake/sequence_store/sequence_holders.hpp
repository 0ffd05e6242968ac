#pragma once
// <root>/sequence_holders/<run>: what one run of a daemon holds of each
// sequence, written by that run alone (its supplier's session). `seq raise`
// reads them: a run that may still hand out a number at or below the new
// floor must say it dropped them before the command exits 0.
//
//   {"owner": "host:port pid 812",
//    "tags": {"order": {"from": 4100, "to": 6000, "dropped_through": 0,
//                       "left": 1900, "rate": 12.5}}}
//
// `from` is at or below the lowest number the run may still hand out (what
// it hands out only rises between two writes), `to` above the highest;
// `dropped_through` the highest floor it has dropped its numbers through.
// `left` and `rate` are its buffer and its pace when written (`seq list`).
//
// Persistent, not ephemeral: a daemon cut off from ZooKeeper goes on handing
// out its ranges after ZooKeeper has ended its session, so a node that went
// with the session would hide numbers still in use. A clean stop deletes
// it; a run killed outright leaves it until the daemon starts again from the
// same state directory (whose lock proves that run over) or an operator who
// knows the run is gone runs `seq forget`.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct HeldSequence {
  std::int64_t from = 0;  // [from, to): what the run may still hand out
  std::int64_t to = 0;
  std::int64_t dropped_through = 0;
  std::int64_t left = 0;
  double rate = 0;  // numbers a second
  bool operator==(const HeldSequence&) const = default;
};

struct HolderRecord {
  std::string owner;  // who runs it, for people: "host:port pid N"
  std::map<std::string, HeldSequence, std::less<>> tags{};
  bool operator==(const HolderRecord&) const = default;
};

std::string encode(const HolderRecord& r);
// nullopt: not a holder's data (or ranges that do not add up).
std::optional<HolderRecord> decode_holder(std::string_view text);

// Whether the run may still hand out a number <= `above` of `tag` without
// having said it dropped them.
bool holds_unconfirmed(const HolderRecord& r, std::string_view tag, std::int64_t above);

// Writes the run's node (made if missing).
Result<void, CoordError> publish_holder(ZkSession& zk, const std::string& root,
                                        const std::string& run, const HolderRecord& r);
// Deletes the run's node; false if there was none.
Result<bool, CoordError> remove_holder(ZkSession& zk, const std::string& root,
                                       const std::string& run);

struct Holder {
  std::string run;
  std::optional<HolderRecord> record;  // nullopt: data that is not a holder's
  std::int64_t written_ms = 0;         // ZooKeeper's time of the last write
};
// Every run's node, sorted by run.
Result<std::vector<Holder>, CoordError> read_holders(ZkSession& zk, const std::string& root);

}  // namespace snowflake::coord
