// The SequenceSupplier when ZooKeeper lost history (sequence_supplier.hpp):
// a loss reported, the sequences frozen (alone, or with the coordinator),
// held ranges restored from the holder node, frozen tags checked again once
// settled, and the restore grace. Why each step is safe: docs/design.md,
// "When ZooKeeper loses its data". The loop is in
// sequence_supplier.cpp; a tag's ranges, in sequence_supplier_ranges.cpp.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "snowflake/base/clock.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

void SequenceSupplier::recheck_frozen() {
  std::lock_guard lock(changed_mutex_);
  for (const SequenceEntry* e : supplied_entries()) {
    if (e->frozen.load(std::memory_order_acquire)) changed_tags_.insert(e->tag);
  }
}

void SequenceSupplier::recheck_when_settled() {
  if (!options_.history) return;
  const bool open = options_.history->open();
  // A raise read while the loss was open left the tag frozen; no watch
  // fires again when the coordinator settles it.
  if (history_was_open_ && !open) recheck_frozen();
  history_was_open_ = open;
}

void SequenceSupplier::report_loss(HistoryLoss kind, std::string detail) {
  if (!options_.history) return;
  options_.history->report(kind, "sequences: " + std::move(detail),
                           std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
  freeze_on_loss();
}

void SequenceSupplier::settle_loss_alone() {
  if (!options_.settles_history || !options_.history || !options_.history->open()) return;
  if (!restore_owed_.empty() || restore_publish_owed_) return;  // ours first: frozen above it
  auto frozen = freeze_sequences(*zk_, options_.root);
  if (!frozen) {
    failed(frozen.error(), "cannot freeze the cluster's sequences after the loss");
    return;
  }
  spdlog::warn(
      "sequences: ZooKeeper lost some of the cluster's history: {} sequence(s) frozen until "
      "seq raise lifts each past what was handed out (docs/operations.md, \"ZooKeeper lost or "
      "restored its data\")",
      frozen.value().size());
  options_.history->settle();
}

bool SequenceSupplier::history_follows(std::int64_t before, std::string_view what) {
  if (!options_.history || !zk_) return true;
  const std::int64_t seen = zk_->highest_zxid();
  if (ClusterHistory::follows(before, seen)) {
    options_.history->saw(seen);
    return true;
  }
  report_loss(HistoryLoss::rolled_back,
              fmt::format("ZooKeeper answered our {} with zxid 0x{:x} at most, though 0x{:x} had "
                          "been seen: its history is behind what it had acknowledged",
                          what, seen, before));
  return false;
}

void SequenceSupplier::freeze_on_loss() {
  if (!options_.history) return;
  const std::uint64_t episodes = options_.history->episodes();
  if (episodes == episodes_handled_) return;
  episodes_handled_ = episodes;
  // Nothing more goes out: flagged first (requests see it before anything
  // else), then each buffer emptied. What we had is then ours only in a
  // history ZooKeeper lost; a range taken again from the restored counter
  // may hold the same numbers.
  for (SequenceEntry* entry : supplied_entries()) {
    entry->frozen.store(true, std::memory_order_release);
    tags_[entry->tag].taken_to = 0;  // dropped below: a raise may start below it
    const auto held = record_.tags.find(entry->tag);
    if (held != record_.tags.end() && held->second.to > 0) {
      entry->buffer.drop_through(held->second.to - 1);
      dropped(tags_[entry->tag], held->second.to - 1);
    }
    entry->waiting.wake_all();  // they answer sequence_frozen now
  }
  // Each watched from now on: a tag this run never took from has no floor
  // watch yet, and only a raise's watch thaws it.
  recheck_frozen();
  acknowledge_drops();
  record_written_ = false;
  for (const auto& [tag, held] : record_.tags) {
    if (held.to > 0) restore_owed_.insert_or_assign(tag, held);
  }
  restore_publish_owed_ = !restore_owed_.empty();
  spdlog::error(
      "sequences: frozen: ZooKeeper lost or rolled back some of the cluster's history, and "
      "nothing is handed out until each sequence is raised past what was (seq raise)");
  // The operator waits for one of two lines from every daemon before a raise
  // (docs/operations.md, the wipe runbook): this one, or restore_held()'s.
  if (!restore_publish_owed_) {
    spdlog::warn("sequences: this daemon held no numbers: nothing of its own to raise past");
  }
}

bool SequenceSupplier::restore_held() {
  // Each tag done once, on its own: one whose freeze keeps failing holds
  // back no other, and a tag frozen (then perhaps raised by the operator)
  // is not frozen again.
  for (auto it = restore_owed_.begin(); it != restore_owed_.end();) {
    const auto& [tag, held] = *it;
    // A period removed after its retention is not made again (no daemon
    // can be in it; made, it would stay below removed_through for good).
    if (const auto removal = removed_period(tag); removal && *removal) {
      it = restore_owed_.erase(it);
      continue;
    }
    // Made again if gone: as this daemon knew it (its template, end and
    // step), else in ranges of what it held (not for a tag known from a
    // segment: a billion numbers each would be every take's least).
    const auto known = tags_.find(tag);
    const bool shape_known = known != tags_.end() && known->second.shape_known;
    SequenceNode like = known != tags_.end() ? known->second.shape : SequenceNode{};
    like.step = shape_known ? std::max<std::int64_t>(1, like.step)
                            : std::max<std::int64_t>(1, held.to - held.from);
    auto frozen = freeze_sequence_above(*zk_, options_.root, tag, held.to - 1, like);
    if (!frozen) {
      failed(frozen.error(), fmt::format("cannot freeze \"{}\"", tag));
      ++it;
      continue;
    }
    spdlog::warn("sequences: \"{}\" is frozen in ZooKeeper above what this daemon held ({})", tag,
                 held.to - 1);
    it = restore_owed_.erase(it);
  }
  // What this run had: seq raise and cluster fence report it.
  if (!restore_owed_.empty() || !publish()) return false;
  restore_publish_owed_ = false;
  spdlog::warn("sequences: this daemon's holder node says what it had handed out");
  return true;
}

bool SequenceSupplier::held_for_grace(BootClock::time_point read_at) {
  return grace_.holds(*zk_, read_at);
}

}  // namespace snowflake::coord
