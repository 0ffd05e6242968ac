#pragma once
// A sequence's ranges in ZooKeeper: each take is one write to the tag's
// node, conditional on the version read (sequence_node.hpp decides what it
// writes). A take whose reply is lost is decided by the attempt's nonce in
// the node, read back; not found, the range is never used (a gap).
//
//   <root>/sequences                 the sequences' directory
//   <root>/sequences/<tag>           SequenceNode, authoritative
//   <root>/sequences/<tag>/floor     {floor, frozen} (encode_floor): what holders watch
//
// Takes and give-backs write only the node, so they wake no daemon. What a
// holder must see (the floor rising, the tag frozen or thawed) is written
// with the node and its floor child in one multi, by create, raise and
// freeze only: a holder watches the child, then reads the node (without a
// watch), and a raise after that read still fires the watch. A tag made
// by an older version has no child; the first raise or freeze makes it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

// A new sequence whose first number is `start`, taken `step` at a time at
// least, with its floor child. CoordErrc::exists (a sequence of that name), zookeeper otherwise.
Result<void, CoordError> create_sequence(ZkSession& zk, const std::string& root,
                                         const std::string& tag, std::int64_t start,
                                         std::int64_t step);
// The same with the whole first node: its next (the start), step, template
// and end (`seq create --template --max`).
Result<void, CoordError> create_sequence(ZkSession& zk, const std::string& root,
                                         const std::string& tag, const SequenceNode& first);

// The tags there are, sorted.
Result<std::vector<std::string>, CoordError> sequence_tags(ZkSession& zk, const std::string& root);

struct SequenceRead {
  SequenceNode node;
  std::int32_t version = 0;
};
// CoordErrc::no_sequence for an unknown tag, unusable for data that is not
// a sequence's. `watch`: the session's watcher hears of the node's next change.
Result<SequenceRead, CoordError> read_sequence(ZkSession& zk, const std::string& root,
                                               const std::string& tag, bool watch = false);
// The tag's node: <root>/sequences/<tag>.
std::string sequence_path(const std::string& root, const std::string& tag);

// The tag's floor child as read; nullopt: none (a tag an older version made).
Result<std::optional<NodeData>, CoordError> read_sequence_floor(ZkSession& zk,
                                                                const std::string& root,
                                                                const std::string& tag);
// The child, as read, says `node`'s floor and frozen.
bool floor_child_says(const std::optional<NodeData>& child, const SequenceNode& node);
// `after` written to the tag's node, read at `version`, and to its floor
// child, in one multi: a set of the child at the version it was read at, or
// its create when `child` is nullopt. bad_version, node_exists or no_node:
// another writer came first; read both again.
Result<void, ZkError> write_sequence_with_floor(ZkSession& zk, const std::string& root,
                                                const std::string& tag, const SequenceNode& after,
                                                std::int32_t version,
                                                const std::optional<NodeData>& child);

// A sequence that restarts each period: period `key`'s node made from the
// definition (first_of_period), read at `definition.version`, if it is not
// there, in one multi with a check of the definition at that version and
// the period's floor child. A removal raises the definition's
// removed_through in the same multi as its delete, so no daemon makes a
// removed period again, from its start, however long it was held up since
// it read the definition (model/period.pml).
enum class PeriodMade {
  made,              // by this call
  there,             // another daemon made it first (or our lost create did)
  removed,           // key <= removed_through: the period is over for good
  frozen,            // the definition is frozen (ZooKeeper lost some history): seq raise first
  definition_moved,  // the definition changed since it was read: read it again
};
Result<PeriodMade, CoordError> make_period(ZkSession& zk, const std::string& root,
                                           const std::string& tag, const SequenceRead& definition,
                                           const std::string& key);

// Period `key`'s node and its floor child deleted, and the definition's
// removed_through raised to `key`, in one multi conditional on the
// definition's version (and the node's, as read here). When is the caller's
// (removable_after_ms): never before the period is over on every clock.
// True: removed (or gone already); false: the definition moved, read again.
Result<bool, CoordError> remove_period(ZkSession& zk, const std::string& root,
                                       const std::string& tag, const SequenceRead& definition,
                                       const std::string& key);

// Who takes: a run of a daemon (its owner token's instance) and the count of
// its attempts, which makes each attempt's nonce unique.
struct SequenceTaker {
  std::string run;
  std::uint64_t attempts = 0;
};

// Takes `count` numbers of `tag` (fewer at its end). Retries a lost
// race a few times; a lost reply is decided by reading the node back.
// `taken_from`, if given: the node the range was taken from (its template
// and end are what the range's numbers are printed with and bounded by).
Result<SequenceTake, CoordError> take_range(ZkSession& zk, const std::string& root,
                                            const std::string& tag, SequenceTaker& taker,
                                            std::int64_t count, SequenceNode* taken_from = nullptr,
                                            bool as_strict_owner = false);

// At a clean stop: moves the tag's `next` back to `first_unused` when the
// newest takes are the run's and adjoin it (plan_give_back). True: given
// back; false: someone took since, the rest is a gap.
Result<bool, CoordError> give_back(ZkSession& zk, const std::string& root, const std::string& tag,
                                   const std::string& run, std::int64_t first_unused);

// Freezes every sequence of the cluster, as a fence is raised (cluster
// fence, a daemon that found a loss): conditional writes; a take that wins
// a race is frozen on the next try. Returns the tags, sorted.
Result<std::vector<std::string>, CoordError> freeze_sequences(ZkSession& zk,
                                                              const std::string& root);

// After ZooKeeper lost some of the cluster's history: the tag frozen, with
// its floor at least `above` (what a daemon that held up to there knows);
// made again, frozen, if it is gone, like `made_like` (its step, template
// and end: what this daemon knew of the tag). The
// floor child with it, as a raise writes it.
Result<void, CoordError> freeze_sequence_above(ZkSession& zk, const std::string& root,
                                               const std::string& tag, std::int64_t above,
                                               const SequenceNode& made_like);

// `seq raise`: the tag's floor raised to `above` (it only rises). The node
// and its child are written even when the floor is already there if the
// child does not say so (made by an older version, or an older raise wrote
// the node alone): that write is what wakes the holders. A period
// ("TAG@KEY") whose node is gone, of a definition that has it and did not
// remove it, is made from the definition above `above` (after ZooKeeper
// lost it: docs/operations.md). A freeze that lands while it runs (the
// tag thawed when first read, frozen when read again after a write lost
// the race) is not undone: CoordErrc::frozen, nothing written (`above` was
// chosen before the loss the freeze is about). `after_read`: called after
// each read of the node, before the write (tests put a freeze there).
Result<SequenceNode, CoordError> raise_sequence(ZkSession& zk, const std::string& root,
                                                const std::string& tag, std::int64_t above,
                                                const std::function<void()>& after_read = {});

// `seq order`: the tag's order set (strict or per-daemon) in one multi with
// its owner record: made, released, for strict (kept if there); deleted for
// per-daemon. `next`: the node's next number when it was set, above every
// range taken before (so a raise to next - 1 drops them all). Refused:
// periodic (a tag that restarts each period is not strict), frozen (seq
// raise first: a raise would thaw it).
struct OrderChange {
  bool changed = false;  // false: it had that order already
  std::int64_t next = 0;
};
Result<OrderChange, CoordError> set_sequence_order(ZkSession& zk, const std::string& root,
                                                   const std::string& tag, bool strict);

}  // namespace snowflake::coord
