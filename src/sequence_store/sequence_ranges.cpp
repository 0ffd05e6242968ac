#include "snowflake/sequence_store/sequence_ranges.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

// Races lost to other daemons' takes before a take gives up for now (the
// caller tries again later): each lost race means another daemon got a range.
constexpr int kMaxTakeAttempts = 16;
// Races lost to takes while freezing one sequence (a take that wins is
// frozen on the next try).
constexpr int kMaxFreezeAttempts = 16;

// A multi's answer a writer reads again after: another writer came first
// (a version moved, the child made or deleted meanwhile), or the answer was
// lost (a write applied twice is the same write).
bool read_again_after(const ZkError& e) {
  return e.code == ZkErrc::bad_version || e.code == ZkErrc::node_exists ||
         e.code == ZkErrc::no_node || e.outcome_unknown();
}

// A strict tag's owner record made, released (nobody owns it yet:
// strict_owner.hpp), unless there: whoever it names is fenced as ever.
Result<void, ZkError> add_owner_record(ZkSession& zk, const std::string& root,
                                       const std::string& tag, std::vector<ZkOp>& ops) {
  if (auto dir = zk.ensure_path(tree::sequence_owners_dir(root)); !dir) return dir.error();
  auto there = zk.exists(tree::sequence_owner(root, tag));
  if (!there) return there.error();
  if (!there.value()) {
    StrictOwner none;
    none.released = true;
    ops.push_back(ZkOp::create(tree::sequence_owner(root, tag), encode(none)));
  }
  return outcome::success();
}

// The node and its floor child made in one multi.
Result<void, ZkError> create_with_floor(ZkSession& zk, const std::string& root,
                                        const std::string& tag, const SequenceNode& node) {
  std::vector<ZkOp> ops{ZkOp::create(sequence_path(root, tag), encode(node)),
                        ZkOp::create(tree::sequence_floor(root, tag), encode_floor(node))};
  // Kept if there: a tag made again after ZooKeeper lost its node, not
  // its record.
  if (node.strict) {
    if (auto added = add_owner_record(zk, root, tag, ops); !added) return added.error();
  }
  auto made = zk.multi(ops);
  if (!made) return made.error();
  return outcome::success();
}

}  // namespace

std::string sequence_path(const std::string& root, const std::string& tag) {
  return tree::sequence_node(root, tag);
}

Result<std::optional<NodeData>, CoordError> read_sequence_floor(ZkSession& zk,
                                                                const std::string& root,
                                                                const std::string& tag) {
  BOOST_OUTCOME_TRY(child, zk.try_get(tree::sequence_floor(root, tag)));
  return child;
}

bool floor_child_says(const std::optional<NodeData>& child, const SequenceNode& node) {
  return child && child->data == encode_floor(node);
}

Result<void, ZkError> write_sequence_with_floor(ZkSession& zk, const std::string& root,
                                                const std::string& tag, const SequenceNode& after,
                                                std::int32_t version,
                                                const std::optional<NodeData>& child) {
  const std::string floor_path = tree::sequence_floor(root, tag);
  std::vector<ZkOp> ops{ZkOp::set(sequence_path(root, tag), encode(after), version)};
  // The child's version wraps too; -1 would read "any version", harmless
  // here (the node's version decides), but said as it is.
  ops.push_back(child ? ZkOp::set(floor_path, encode_floor(after), child->stat.version)
                      : ZkOp::create(floor_path, encode_floor(after)));
  auto written = zk.multi(ops);
  if (!written) return written.error();
  return outcome::success();
}

Result<void, CoordError> create_sequence(ZkSession& zk, const std::string& root,
                                         const std::string& tag, std::int64_t start,
                                         std::int64_t step) {
  SequenceNode first;
  first.next = start;
  first.step = step;
  return create_sequence(zk, root, tag, first);
}

Result<void, CoordError> create_sequence(ZkSession& zk, const std::string& root,
                                         const std::string& tag, const SequenceNode& first) {
  BOOST_OUTCOME_TRY(zk.ensure_path(tree::sequences_dir(root)));
  auto created = create_with_floor(zk, root, tag, first);
  if (!created) {
    if (created.error().code == ZkErrc::node_exists) {
      return CoordError{CoordErrc::sequence_exists,
                        fmt::format("a sequence \"{}\" exists under {} (seq list shows it)", tag,
                                    tree::sequences_dir(root))};
    }
    return CoordError::from(created.error());
  }
  return outcome::success();
}

Result<PeriodMade, CoordError> make_period(ZkSession& zk, const std::string& root,
                                           const std::string& tag, const SequenceRead& definition,
                                           const std::string& key) {
  const SequenceNode& d = definition.node;
  if (d.reset == PeriodReset::none || !is_period_key(d.reset, key)) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("sequence \"{}\" has no period \"{}\"", tag, key)};
  }
  if (!d.removed_through.empty() && key <= d.removed_through) return PeriodMade::removed;
  // A restored ZooKeeper may lack a period whose numbers went out: none is
  // made from its start until the definition is raised (thawed).
  if (d.frozen) return PeriodMade::frozen;
  const std::string name = period_tag(tag, key);
  const SequenceNode first = first_of_period(d);
  auto made = zk.multi({ZkOp::check(sequence_path(root, tag), definition.version),
                        ZkOp::create(sequence_path(root, name), encode(first)),
                        ZkOp::create(tree::sequence_floor(root, name), encode_floor(first))});
  if (made) return PeriodMade::made;
  const ZkError& e = made.error();
  if (e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node)
    return PeriodMade::definition_moved;
  if (e.code != ZkErrc::node_exists && !e.outcome_unknown()) return CoordError::from(e);
  // Made before us (or by our own create whose answer was lost): it is
  // there if it reads as a sequence; a multi that failed made nothing.
  auto there = read_sequence(zk, root, name);
  if (there) return PeriodMade::there;
  if (there.error().code == CoordErrc::no_sequence) return PeriodMade::definition_moved;
  return there.error();
}

Result<bool, CoordError> remove_period(ZkSession& zk, const std::string& root,
                                       const std::string& tag, const SequenceRead& definition,
                                       const std::string& key) {
  SequenceNode after = definition.node;
  if (after.reset == PeriodReset::none || !is_period_key(after.reset, key)) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("sequence \"{}\" has no period \"{}\"", tag, key)};
  }
  const std::string name = period_tag(tag, key);
  auto node = zk.try_get(sequence_path(root, name));
  if (!node) return CoordError::from(node.error());
  auto child = zk.try_get(tree::sequence_floor(root, name));
  if (!child) return CoordError::from(child.error());
  if (after.removed_through < key) after.removed_through = key;
  std::vector<ZkOp> ops{ZkOp::set(sequence_path(root, tag), encode(after), definition.version)};
  if (child.value())
    ops.push_back(ZkOp::remove(tree::sequence_floor(root, name), child.value()->stat.version));
  if (node.value())
    ops.push_back(ZkOp::remove(sequence_path(root, name), node.value()->stat.version));
  auto removed = zk.multi(ops);
  if (removed) return true;
  if (read_again_after(removed.error())) return false;
  return CoordError::from(removed.error());
}

Result<std::vector<std::string>, CoordError> sequence_tags(ZkSession& zk, const std::string& root) {
  BOOST_OUTCOME_TRY(names, zk.try_children(tree::sequences_dir(root)));
  std::vector<std::string> tags = names ? std::move(names).value() : std::vector<std::string>{};
  std::sort(tags.begin(), tags.end());
  return tags;
}

Result<SequenceRead, CoordError> read_sequence(ZkSession& zk, const std::string& root,
                                               const std::string& tag, bool watch) {
  const std::string path = sequence_path(root, tag);
  BOOST_OUTCOME_TRY(found, zk.try_get(path, watch));
  if (!found) {
    return CoordError{
        CoordErrc::no_sequence,
        fmt::format("no sequence \"{}\" (no node {}); seq create makes one", tag, path)};
  }
  auto node = decode_sequence(found->data);
  if (!node) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("{} holds \"{}\", not a sequence's data", path, found->data)};
  }
  return SequenceRead{std::move(*node), found->stat.version};
}

Result<SequenceTake, CoordError> take_range(ZkSession& zk, const std::string& root,
                                            const std::string& tag, SequenceTaker& taker,
                                            std::int64_t count, SequenceNode* taken_from,
                                            bool as_strict_owner) {
  const std::string path = sequence_path(root, tag);
  for (int attempt = 0; attempt < kMaxTakeAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(read, read_sequence(zk, root, tag));
    const std::string nonce = take_nonce(taker.run, ++taker.attempts);
    const auto planned = plan_take(read.node, read.version, nonce, count, as_strict_owner);
    if (planned.refusal == TakeRefusal::frozen) {
      return CoordError{CoordErrc::frozen,
                        fmt::format("sequence \"{}\" is frozen: ZooKeeper lost or rolled back some "
                                    "of the cluster's history, so what was handed out is in doubt "
                                    "(seq raise {} --above N thaws it)",
                                    tag, tag)};
    }
    if (planned.refusal == TakeRefusal::exhausted) {
      return CoordError{CoordErrc::sequence_exhausted,
                        fmt::format("sequence \"{}\" has no number left: its next range would "
                                    "start at {}, and its numbers end below {}",
                                    tag, first_untaken(read.node), read.node.end)};
    }
    if (planned.refusal == TakeRefusal::periodic) {
      return CoordError{CoordErrc::periodic,
                        fmt::format("sequence \"{}\" restarts each period: its numbers are in "
                                    "its periods' nodes, not its own",
                                    tag)};
    }
    if (planned.refusal == TakeRefusal::strict) {
      return CoordError{
          CoordErrc::strict,
          fmt::format("sequence \"{}\" is strict: only its owner takes its ranges", tag)};
    }
    if (!planned.plan) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("sequence \"{}\" cannot hand out more ({}: its node's "
                                    "version came round to -1, which ZooKeeper reads as any "
                                    "version)",
                                    tag, to_string(*planned.refusal))};
    }
    auto written = zk.set(path, encode(planned.plan->after), read.version);
    if (taken_from) *taken_from = planned.plan->after;
    if (written) return planned.plan->range;
    if (written.error().code == ZkErrc::bad_version) continue;  // another daemon took first
    if (!written.error().outcome_unknown()) return CoordError::from(written.error());
    // The reply was lost: the write may have been applied. Only our nonce in
    // the node says it was; then the range is ours. Otherwise it is never
    // used, even if the write lands later (a gap, never a duplicate). The
    // data equal to ours proves nothing: another daemon that read the same
    // node plans the same range.
    BOOST_OUTCOME_TRY(again, read_sequence(zk, root, tag));
    if (auto ours = find_take(again.node, nonce)) return *ours;
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("sequence \"{}\": {} takes in a row lost the race to other "
                                "daemons' takes; trying again later",
                                tag, kMaxTakeAttempts)};
}

Result<bool, CoordError> give_back(ZkSession& zk, const std::string& root, const std::string& tag,
                                   const std::string& run, std::int64_t first_unused) {
  BOOST_OUTCOME_TRY(read, read_sequence(zk, root, tag));
  if (read.version == -1) return false;  // "any version": never written with
  const auto back = plan_give_back(read.node, run, first_unused);
  if (!back) return false;
  auto written = zk.set(sequence_path(root, tag), encode(*back), read.version);
  if (written) return true;
  // Someone took meanwhile, or the reply was lost: either way the rest stays
  // a gap, or was given back; nothing is handed out twice.
  if (written.error().code == ZkErrc::bad_version || written.error().outcome_unknown()) {
    return false;
  }
  return CoordError::from(written.error());
}

Result<void, CoordError> freeze_sequence_above(ZkSession& zk, const std::string& root,
                                               const std::string& tag, std::int64_t above,
                                               const SequenceNode& made_like) {
  for (int attempt = 0; attempt < kMaxTakeAttempts; ++attempt) {
    auto read = read_sequence(zk, root, tag);
    if (!read) {
      if (read.error().code != CoordErrc::no_sequence) return read.error();
      BOOST_OUTCOME_TRY(zk.ensure_path(tree::sequences_dir(root)));
      SequenceNode like;
      like.step = std::max<std::int64_t>(1, made_like.step);
      like.number_template = made_like.number_template;
      like.end = made_like.end;
      like.strict = made_like.strict;
      const SequenceNode made = freeze(like, above);
      auto created = create_with_floor(zk, root, tag, made);
      if (created) return outcome::success();
      if (created.error().code != ZkErrc::node_exists && !created.error().outcome_unknown())
        return CoordError::from(created.error());
      continue;  // made meanwhile (or by our own lost create): read it
    }
    BOOST_OUTCOME_TRY(child, read_sequence_floor(zk, root, tag));
    const SequenceNode after = freeze(read.value().node, above);
    if (after == read.value().node && floor_child_says(child, after)) return outcome::success();
    if (read.value().version == -1) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("sequence \"{}\": its node's version came round to -1", tag)};
    }
    auto written = write_sequence_with_floor(zk, root, tag, after, read.value().version, child);
    if (written) return outcome::success();
    if (!read_again_after(written.error())) return CoordError::from(written.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("sequence \"{}\" kept changing while it was frozen", tag)};
}

Result<std::vector<std::string>, CoordError> freeze_sequences(ZkSession& zk,
                                                              const std::string& root) {
  BOOST_OUTCOME_TRY(tags, sequence_tags(zk, root));
  for (const auto& tag : tags) {
    bool done = false;
    for (int attempt = 0; attempt < kMaxFreezeAttempts && !done; ++attempt) {
      auto read = read_sequence(zk, root, tag);
      if (!read) {
        if (read.error().code == CoordErrc::no_sequence) break;  // deleted meanwhile
        // Data that is not a sequence's hands nothing out anyway.
        if (read.error().code == CoordErrc::unusable) break;
        return read.error();
      }
      BOOST_OUTCOME_TRY(child, read_sequence_floor(zk, root, tag));
      // Frozen, and its floor child says so (the holders heard it).
      if (read.value().node.frozen && floor_child_says(child, read.value().node)) break;
      if (read.value().version == -1) break;  // takes refuse it already (version_wrapped)
      // The node and its floor child in one multi: the holders' watches fire.
      auto set = write_sequence_with_floor(zk, root, tag, freeze(read.value().node),
                                           read.value().version, child);
      if (set) {
        done = true;
      } else if (set.error().code != ZkErrc::bad_version &&
                 set.error().code != ZkErrc::node_exists && set.error().code != ZkErrc::no_node &&
                 !set.error().outcome_unknown()) {
        return CoordError::from(set.error());
      }
    }
    if (!done) {
      // Only a take that keeps winning gets here; read what it left.
      BOOST_OUTCOME_TRY(again, read_sequence(zk, root, tag));
      if (!again.node.frozen) {
        return CoordError{CoordErrc::zookeeper,
                          fmt::format("sequence \"{}\" kept changing while it was frozen", tag)};
      }
    }
  }
  return tags;
}

namespace {

// `seq raise TAG@KEY` of a period whose node is gone (ZooKeeper lost it and
// no daemon that held it made it again): made from the definition, raised,
// in one multi conditional on the definition's version, so that no daemon
// makes it from its start meanwhile (a definition made again after a loss
// is frozen: `seq create --frozen`). nullopt: made by someone meanwhile, or
// the definition moved: read again.
Result<std::optional<SequenceNode>, CoordError> make_period_above(ZkSession& zk,
                                                                  const std::string& root,
                                                                  const std::string& name,
                                                                  std::int64_t above) {
  const auto at = name.find('@');
  if (at == std::string::npos) {
    return CoordError{CoordErrc::no_sequence,
                      fmt::format("no sequence \"{}\"; seq create makes one", name)};
  }
  const std::string tag = name.substr(0, at);
  const std::string key = name.substr(at + 1);
  BOOST_OUTCOME_TRY(definition, read_sequence(zk, root, tag));
  const SequenceNode& d = definition.node;
  if (d.reset == PeriodReset::none || !is_period_key(d.reset, key)) {
    return CoordError{CoordErrc::no_sequence,
                      fmt::format("sequence \"{}\" has no period \"{}\"", tag, key)};
  }
  if (!d.removed_through.empty() && key <= d.removed_through) {
    return CoordError{CoordErrc::no_sequence,
                      fmt::format("period {} of \"{}\" was removed after its retention (through "
                                  "{}): no daemon serves it again",
                                  key, tag, d.removed_through)};
  }
  // Above its start only: made from its start, it would repeat whatever of
  // it went out before the loss. A period none of whose numbers went out
  // is made by the daemons once the definition is thawed.
  if (above < d.next) {
    return CoordError{
        CoordErrc::no_sequence,
        fmt::format("period {} of \"{}\" has no node: seq raise makes it only above its start "
                    "({}), with --above the largest number of it handed out",
                    key, tag, d.next)};
  }
  const SequenceNode first = raised(first_of_period(d), above);
  auto made = zk.multi({ZkOp::check(sequence_path(root, tag), definition.version),
                        ZkOp::create(sequence_path(root, name), encode(first)),
                        ZkOp::create(tree::sequence_floor(root, name), encode_floor(first))});
  if (made) return std::optional<SequenceNode>(first);
  if (read_again_after(made.error())) return std::optional<SequenceNode>();
  return CoordError::from(made.error());
}

}  // namespace

Result<SequenceNode, CoordError> raise_sequence(ZkSession& zk, const std::string& root,
                                                const std::string& tag, std::int64_t above,
                                                const std::function<void()>& after_read) {
  // Whether the first read found the tag frozen: `above` was chosen knowing
  // that (or not). A freeze that lands between a read and the conditional
  // write makes the write fail; the retry must not thaw it with a floor the
  // operator chose before ZooKeeper lost the numbers the freeze is about
  // (model/lost_data.pml, "a raise racing a freeze").
  std::optional<bool> first_read_frozen;
  for (int attempt = 0; attempt < kMaxTakeAttempts; ++attempt) {
    auto found = read_sequence(zk, root, tag);
    if (!found && found.error().code == CoordErrc::no_sequence) {
      BOOST_OUTCOME_TRY(made, make_period_above(zk, root, tag, above));
      if (made) return *made;
      continue;  // there now, or the definition moved: read again
    }
    BOOST_OUTCOME_TRY(read, std::move(found));
    if (!first_read_frozen) first_read_frozen = read.node.frozen;
    if (read.node.frozen && !*first_read_frozen) {
      return CoordError{
          CoordErrc::frozen,
          fmt::format("sequence \"{}\" was frozen while the raise ran (a daemon found that "
                      "ZooKeeper lost some of its history): the raise does not thaw it; find the "
                      "highest number the application used, then run seq raise {} --above N again",
                      tag, tag)};
    }
    // A definition's `next` is each period's start: a raise above 0 would
    // move every later period's start. Its periods are raised one by one.
    if (read.node.reset != PeriodReset::none && above > 0) {
      return CoordError{CoordErrc::periodic,
                        fmt::format("sequence \"{}\" restarts each period: raise one period "
                                    "(seq raise {}@<period> --above N); --above 0 thaws the "
                                    "sequence itself",
                                    tag, tag)};
    }
    BOOST_OUTCOME_TRY(child, read_sequence_floor(zk, root, tag));
    if (after_read) after_read();
    const SequenceNode after = raised(read.node, above);
    // Written even unchanged when the child does not say so: a tag made by
    // an older version has none, and an older `seq raise` wrote the node
    // alone; the child's write is what rings the holders.
    if (after == read.node && floor_child_says(child, after)) return after;
    if (read.version == -1) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("sequence \"{}\": its node's version came round to -1", tag)};
    }
    auto written = write_sequence_with_floor(zk, root, tag, after, read.version, child);
    if (written) return after;
    // Lost or raced: read again; a raise applied twice is the same raise.
    if (!read_again_after(written.error())) return CoordError::from(written.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("sequence \"{}\": the raise kept losing the race to takes", tag)};
}

Result<OrderChange, CoordError> set_sequence_order(ZkSession& zk, const std::string& root,
                                                   const std::string& tag, bool strict) {
  for (int attempt = 0; attempt < kMaxTakeAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(read, read_sequence(zk, root, tag));
    if (strict && read.node.reset != PeriodReset::none) {
      return CoordError{CoordErrc::periodic,
                        fmt::format("sequence \"{}\" restarts each period: its order is per "
                                    "daemon, each period's from its start",
                                    tag)};
    }
    if (read.node.frozen) {
      return CoordError{CoordErrc::frozen,
                        fmt::format("sequence \"{}\" is frozen (ZooKeeper lost some of its "
                                    "history): seq raise {} --above N first",
                                    tag, tag)};
    }
    std::vector<ZkOp> ops;
    if (read.node.strict != strict) {
      SequenceNode after = read.node;
      after.strict = strict;
      ops.push_back(ZkOp::set(sequence_path(root, tag), encode(after), read.version));
    }
    if (strict) {
      if (auto added = add_owner_record(zk, root, tag, ops); !added) {
        return CoordError::from(added.error());
      }
    } else {
      auto there = zk.exists(tree::sequence_owner(root, tag));
      if (!there) return CoordError::from(there.error());
      if (there.value()) ops.push_back(ZkOp::remove(tree::sequence_owner(root, tag), -1));
    }
    if (ops.empty()) return OrderChange{false, read.node.next};
    // With the node's version checked even when only the record changes:
    // `next` is the one at the write.
    if (read.node.strict == strict)
      ops.push_back(ZkOp::check(sequence_path(root, tag), read.version));
    auto written = zk.multi(ops);
    if (written) return OrderChange{read.node.strict != strict, read.node.next};
    if (!read_again_after(written.error())) return CoordError::from(written.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("sequence \"{}\": the order kept losing the race to takes", tag)};
}

}  // namespace snowflake::coord
