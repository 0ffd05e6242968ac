#pragma once
// Who hands out a strict sequence's numbers (`seq create --order strict`):
// one daemon at a time, named in the tag's owner record, made with the tag
// (released: nobody owns it yet), which every daemon lists and watches,
//
//   <root>/sequence_owners/<tag>  {"worker_id": 3, "node": "<its worker node>",
//                                  "token": "<its run>", "address": "host:port",
//                                  "released": false, "tls": true}
//
// ("tls" only when its HTTP API is served over TLS: other daemons then pass
// requests on over TLS, verifying it, where http.forward_ca_file is set, and
// refuse naming it where it is not.)
//
// An owner is a held worker ID, and its claim is fenced with that worker
// ID's own lease (docs/design.md, "Strict sequences: one owner, fenced by
// its worker ID's lease"): the owner hands out the tag's numbers only while
// its worker-ID lease runs without a break since it last read the record
// as its own. Another daemon takes the tag over only once that lease is
// over for good, by ZooKeeper's records:
//
// - released: the owner stopped cleanly (its rest given back in the same
//   multi): at once;
// - its alive node gone, and its worker node last written (its last
//   heartbeat) at least the wait ago by ZooKeeper's clock: the claim's
//   multi checks the worker node at that version and that no session holds
//   the alive node, so a heartbeat that comes back first fails the claim;
// - its alive node held by another run since at least the wait ago: the
//   old run's heartbeats fail since then (its alive node is not its own);
// - its worker node gone (given back, or reclaimed once stale), with no
//   session holding the worker ID: at once.
// The wait is the longer of reclaim_after and the owner's own recorded
// lease plus safety_margin; for recycle the claim also checks the pool's
// move count, so the worker ID given up and claimed again since fails it.
//
// reclaim_after >= lease_timeout + safety_margin (config), so the old owner
// has stopped before the new one starts; the new one takes its first range
// from the node, above every range the old one took.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct StrictOwner {
  std::uint32_t worker_id = 0;
  std::string node;     // the worker ID's node, which its heartbeats write
  std::string token;    // the holding run's owner-token instance (alive/<id>'s data has it)
  std::string address;  // "host:port": where its HTTP API answers
  bool released = false;
  bool tls = false;  // its HTTP API is served over TLS (https://address)
  bool operator==(const StrictOwner&) const = default;
};

std::string encode(const StrictOwner& o);
// nullopt: not an owner record.
std::optional<StrictOwner> decode_strict_owner(std::string_view text);

// The tag's owner record: <root>/sequence_owners/<tag>.
std::string strict_owner_path(const std::string& root, const std::string& tag);

// Rendezvous hashing: the candidates ranked for `tag`, the preferred first.
// Every daemon ranks alike from the same worker IDs, and a worker ID that
// comes or goes moves only the tags it ranks first for.
std::vector<std::uint32_t> rank_owners(std::string_view tag, std::vector<std::uint32_t> ids);

struct OwnerRead {
  std::optional<StrictOwner> owner;  // nullopt: no record yet (nobody ever owned it)
  std::int32_t version = -1;         // -1: no record
};
Result<OwnerRead, CoordError> read_strict_owner(ZkSession& zk, const std::string& root,
                                                const std::string& tag, bool watch);

// Whether, and from when, the recorded owner's lease is over for good (the
// header's rules), with what the claim's multi must check so that it still
// holds when the claim lands.
// The owner's alive node is read with a watch: its going (or coming) fires.
struct TakeoverJudgement {
  bool allowed = false;
  // Not allowed yet: how long until it may be by ZooKeeper's clock
  // (nullopt: not by waiting alone, the owner's run holds its worker ID).
  std::optional<std::chrono::milliseconds> wait;
  std::vector<ZkOp> checks;
  std::string why;  // for the log
};
struct TakeoverTimings {
  std::chrono::milliseconds reclaim_after;  // coordinator.reclaim_after_ms
  std::chrono::milliseconds safety_margin;  // coordinator.safety_margin_ms
};
// The wait is the longer of reclaim_after and the owner's recorded lease
// plus the margin (a daemon on other settings, in a rollout). The claim's
// checks pin what was judged: the worker node's version, and for recycle
// the pool's move count, so the worker ID given up and taken again since
// fails the claim.
Result<TakeoverJudgement, CoordError> judge_takeover(ZkSession& zk, const std::string& root,
                                                     const StrictOwner& owner,
                                                     const TakeoverTimings& timings);

// Writes `me` as the owner, conditional on the record as read (`read`) and
// on `checks`. False: someone else came first (read again).
Result<bool, CoordError> claim_strict_owner(ZkSession& zk, const std::string& root,
                                            const std::string& tag, const OwnerRead& read,
                                            const StrictOwner& me, const std::vector<ZkOp>& checks);

// A clean stop: the record says released, in one multi with `node_op` if
// given (the node with our rest given back, or checked, at the version
// read before the record). False: the record or the node moved. A lost
// answer is read back (the record released naming our run: true), and sent
// once more if the record is still as read.
Result<bool, CoordError> release_strict_owner(ZkSession& zk, const std::string& root,
                                              const std::string& tag, const OwnerRead& read,
                                              const std::optional<ZkOp>& node_op);

}  // namespace snowflake::coord
