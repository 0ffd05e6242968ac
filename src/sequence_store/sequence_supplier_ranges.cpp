// The SequenceSupplier's ranges of a tag (sequence_supplier.hpp): its floor
// and frozen state checked, the next range wanted, sized, taken or refused,
// its shape learned, its numbers settled, and drops acknowledged. The loop is
// in sequence_supplier.cpp; losses of history, in
// sequence_supplier_losses.cpp.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

bool SequenceSupplier::check_floor(SequenceEntry& entry, TagState& state) {
  if (!zk_) return false;
  const auto held = record_.tags.find(entry.tag);
  const bool holds = held != record_.tags.end() && held->second.to > 0;
  // The floor child's watch first (it fires on the child's creation too: a
  // tag an older version made has none until a raise), then the node read
  // without a watch: a raise after the read writes the child, and fires it.
  // Takes write the node alone, so other daemons' takes cost nothing here.
  auto armed = zk_->exists(tree::sequence_floor(options_.root, entry.tag), /*watch=*/true);
  if (!armed) {
    failed(CoordError::from(armed.error()),
           fmt::format("cannot watch the floor of \"{}\"", entry.tag));
    return false;
  }
  // An exhausted tag watches its node too: a give-back, which writes the
  // node alone, makes room.
  auto read = read_sequence(*zk_, options_.root, entry.tag, /*watch=*/state.node_exhausted);
  if (read && !state.node_exhausted && is_exhausted(read.value().node)) {
    read = read_sequence(*zk_, options_.root, entry.tag, /*watch=*/true);  // ran out: watched
  }
  if (!read) {
    if (read.error().code == CoordErrc::no_sequence && holds &&
        entry.tag.find('@') != std::string::npos) {
      // A period's node removed after its retention (frozen here or not):
      // let go, not lost.
      const auto removal = removed_period(entry.tag);
      if (!removal) return false;  // the definition unread: judged on the next pass
      if (*removal) return true;
    }
    if (read.error().code == CoordErrc::no_sequence && holds && !entry.frozen.load()) {
      // Nothing else deletes a sequence: ZooKeeper lost it.
      report_loss(HistoryLoss::wiped,
                  fmt::format("\"{}\" is gone though this daemon holds [{}, {}) of it", entry.tag,
                              held->second.from, held->second.to));
      return true;
    }
    if (read.error().code == CoordErrc::no_sequence && !holds) {
      // Gone (a wipe, seq forget), and none of it ours: the floor child's
      // watch, set above, fires when it is made again. Not read again
      // before that.
      return true;
    }
    failed(read.error(), fmt::format("cannot read the floor of \"{}\"", entry.tag));
    return false;
  }
  const SequenceNode& node = read.value().node;
  state.node_exhausted = is_exhausted(node);
  update_exhausted(entry, state);
  if (holds && node.next < held->second.to && !entry.frozen.load()) {
    // `next` never falls below a range taken (a give-back moves it back only
    // to the giver's own unused rest, above every earlier range).
    report_loss(HistoryLoss::rolled_back,
                fmt::format("\"{}\" takes its next range from {}, though this daemon took up "
                            "to {}",
                            entry.tag, node.next, held->second.to));
    return true;
  }
  // Frozen in ZooKeeper, or a loss not yet fenced: nothing goes out; thawed
  // (seq raise) once the cluster is fenced: numbers go out again. A tag this
  // daemon held stays frozen until its node is frozen above what it held
  // (restore_held): an unfrozen node then is the restored copy's, behind it.
  const bool frozen = node.frozen || (options_.history && options_.history->open()) ||
                      restore_owed_.contains(entry.tag);
  if (frozen != entry.frozen.load()) {
    if (frozen && holds) entry.buffer.drop_through(held->second.to - 1);
    entry.frozen.store(frozen, std::memory_order_release);
    entry.waiting.wake_all();
    spdlog::warn("sequences: \"{}\" is {}", entry.tag,
                 frozen ? "frozen: nothing is handed out until seq raise thaws it" : "thawed");
    if (frozen && holds) dropped(state, held->second.to - 1);
  }
  const std::int64_t floor = node.floor;
  if (floor <= state.dropped_through) return true;
  entry.buffer.drop_through(floor);
  state.dropped_through = floor;
  if (held != record_.tags.end()) dropped(state, floor);  // acknowledged once drained
  spdlog::info("sequences: \"{}\": nothing at or below {} is handed out (seq raise)", entry.tag,
               floor);
  return true;
}

void SequenceSupplier::update_exhausted(SequenceEntry& entry, const TagState& state) {
  const bool exhausted = state.node_exhausted && !state.settling && !state.joining;
  if (exhausted == entry.exhausted.load()) return;
  entry.exhausted.store(exhausted, std::memory_order_release);
  entry.waiting.wake_all();
  if (exhausted) {
    spdlog::warn(
        "sequences: \"{}\" has no number left to take: once this daemon's buffer is empty it "
        "answers 410 sequence_exhausted",
        entry.tag);
  } else {
    spdlog::info("sequences: \"{}\" has numbers to take again", entry.tag);
  }
}

void SequenceSupplier::check_changed_floors() {
  std::set<std::string> changed;
  {
    std::lock_guard lock(changed_mutex_);
    changed.swap(changed_tags_);
  }
  for (const auto& tag : changed) {
    SequenceEntry* entry = entry_of(tag);
    if (!entry) continue;
    if (!check_floor(*entry, tags_[tag])) {
      std::lock_guard lock(changed_mutex_);
      changed_tags_.insert(tag);  // again on the next pass
    }
  }
  // An acknowledgement `seq raise` waits for: written at once, once the
  // replies from before the drop are out.
  acknowledge_drops();
  if (!record_written_ && !record_.tags.empty()) publish();
}

void SequenceSupplier::dropped(TagState& state, std::int64_t floor) {
  state.to_acknowledge = std::max(state.to_acknowledge, floor);
}

void SequenceSupplier::acknowledge_drops() {
  for (auto& [tag, held] : record_.tags) {
    TagState& state = tags_[tag];
    SequenceEntry* entry = entry_of(tag);
    if (!entry) continue;
    if (!state.draining) {
      const auto first_unused = entry->buffer.state().first_unused;
      const bool floor_owed = state.to_acknowledge > held.dropped_through;
      const bool from_behind = first_unused && *first_unused > held.from;
      if (!floor_owed && !from_behind) continue;
      // The drop is done and the first unused number read: replies that
      // reserve from now on hold nothing at or below the one, nor below the
      // other; those counted before may, until written.
      entry->replies.begin_drain();
      state.draining =
          TagState::Drain{state.to_acknowledge, from_behind ? first_unused : std::nullopt};
    }
    if (!entry->replies.drained()) continue;  // on a later pass (a reply is being written)
    const TagState::Drain done = *state.draining;
    state.draining.reset();
    if (done.from) held.from = std::clamp(*done.from, held.from, held.to);
    if (done.floor > held.dropped_through) {
      held.dropped_through = done.floor;
      record_written_ = false;  // an acknowledgement: publish() says so at once
    }
  }
}

bool SequenceSupplier::wants_range(const SequenceEntry& entry, const TagState& state,
                                   const SequenceBufferState& buffered, bool top_up) const {
  // Nothing is taken for a tag nobody asked this daemon for, or frozen.
  if (state.last_size == 0 && !entry.wanted.load(std::memory_order_acquire)) return false;
  if (entry.frozen.load(std::memory_order_acquire) || state.shape_conflict) return false;
  // None left to take: the node's watch says when a give-back makes room.
  if (entry.exhausted.load(std::memory_order_acquire)) return false;
  if (!top_up && !should_refill(buffered.current_size, buffered.current_left, buffered.queued,
                                options_.sizing)) {
    return false;
  }
  // Not connected (or the session just dropped): a call now would wait out
  // the session's timeout.
  return zk_ && zk_->connected();
}

std::int64_t SequenceSupplier::next_size(const TagState& state, double rate) const {
  const std::int64_t size = next_range_size(rate, state.last_size, 1, options_.sizing);
  if (state.left_in_node < 0) return size;
  return std::min(size, std::max<std::int64_t>(1, state.left_in_node / 8));
}

void SequenceSupplier::take_refused(SequenceEntry& entry, TagState& state, const CoordError& e) {
  if (e.code == CoordErrc::periodic) {
    learn_periodic(entry);  // its periods are supplied from the next pass
    return;
  }
  if (e.code == CoordErrc::strict) {
    relist_strict_.store(true);  // made strict since we listed: its owner record says who serves
    return;
  }
  if (e.code == CoordErrc::frozen || e.code == CoordErrc::sequence_exhausted) {
    check_floor(entry, state);  // frozen or exhausted here too, and watched for the change
    return;
  }
  const auto held = record_.tags.find(entry.tag);
  if (e.code == CoordErrc::no_sequence && held != record_.tags.end() && held->second.to > 0) {
    // Gone though we hold some of it, and no watch said so (the floor
    // child went first, its watch read the node still there): a period's
    // removal, or a loss. check_floor judges which.
    check_floor(entry, state);
    return;
  }
  entry.gauges.fetch_failures.fetch_add(1, std::memory_order_relaxed);
  failed(e, fmt::format("cannot take a range of \"{}\"", entry.tag));
}

void SequenceSupplier::supply(SequenceEntry& entry, TagState& state, bool top_up) {
  const SequenceBufferState buffered = entry.buffer.state();
  const std::int64_t left = buffered.current_left + buffered.queued;
  state.meter.sample(
      static_cast<std::int64_t>(entry.gauges.handed_out.load(std::memory_order_relaxed)),
      RateMeter::Clock::now());
  const double measured = state.meter.per_second();
  const double rate = std::max(measured, state.rate_hint);  // what sizes its ranges
  entry.gauges.left.store(left, std::memory_order_relaxed);
  entry.gauges.rate.store(measured, std::memory_order_relaxed);

  if (state.settling && !settle(entry, state)) return;
  if (!wants_range(entry, state, buffered, top_up)) return;
  const std::int64_t size = next_size(state, rate);
  const std::int64_t before = options_.history ? options_.history->highest_zxid() : 0;
  SequenceNode taken_from;
  auto taken =
      take_range(*zk_, options_.root, entry.tag, taker_, size, &taken_from, entry.strict.strict());
  if (!taken) {
    take_refused(entry, state, taken.error());
    return;
  }
  if (!history_follows(before, "take of a range")) return;  // the range is never used
  if (!learn_shape(entry, state, taken_from)) return;       // the range is never used
  const SequenceTake& range = taken.value();
  state.left_in_node = taken_from.end == kSequenceMax ? -1 : taken_from.end - range.end;
  entry.gauges.left_to_take.store(state.left_in_node, std::memory_order_relaxed);
  entry.gauges.last_number.store(taken_from.end == kSequenceMax ? -1 : taken_from.end - 1,
                                 std::memory_order_relaxed);
  // Named in the holder node, then the floor read again, before any of it
  // is handed out (the header says why); failing either, the range is a gap.
  if (state.taken_to > range.start) {
    // Every take moves `next` past the range taken, and a give-back only to
    // the giver's own unused rest: a range that starts below one this run
    // took since the last loss comes from a counter ZooKeeper rolled back (a
    // restore). Never used; restore_held freezes the tag above what we held.
    report_loss(HistoryLoss::rolled_back,
                fmt::format("\"{}\" handed us [{}, {}), though this daemon took up to {}",
                            entry.tag, range.start, range.end, state.taken_to));
    return;
  }
  state.taken_to = range.end;
  HeldSequence& held = record_.tags[entry.tag];
  if (held.to == 0) held.from = range.start;  // the first range this run holds
  held.to = range.end;
  record_written_ = false;
  const auto read_at = BootClock::now();  // the floor's read, below
  state.joining = true;  // the node may say exhausted already: not here until it is in
  const bool named = publish() && check_floor(entry, state);
  state.joining = false;
  if (!named) {
    update_exhausted(entry, state);
    spdlog::warn("sequences: \"{}\": [{}, {}) is not used (a gap)", entry.tag, range.start,
                 range.end);
    return;
  }
  state.last_size = range.end - range.start;
  entry.gauges.fetches.fetch_add(1, std::memory_order_relaxed);
  entry.gauges.step.store(state.last_size, std::memory_order_relaxed);
  if (held_for_grace(read_at)) {
    // Over a connection still in its grace: it may come from a restored
    // counter whose freeze (cluster fence, or a daemon that lived through
    // it) is not written yet. Handed out once the grace is over and the node
    // is read again (docs/design.md, "A restore, and the grace").
    state.settling = SequenceRange{range.start, range.end};
    update_exhausted(entry, state);  // not while it settles
    spdlog::info(
        "sequences: \"{}\" took [{}, {}) over a new ZooKeeper connection: handed out "
        "once coordinator.restore_grace_ms is over and the sequence is read again",
        entry.tag, range.start, range.end);
    return;
  }
  const bool added = entry.buffer.add({range.start, range.end});
  update_exhausted(entry, state);  // once its numbers are in the buffer
  if (!added) return;              // closed: stopping
  entry.waiting.wake_all();
  entry.gauges.left.store(left + state.last_size, std::memory_order_relaxed);
  spdlog::debug("sequences: \"{}\" took [{}, {}) at {:.0f}/s", entry.tag, range.start, range.end,
                rate);
}

bool SequenceSupplier::learn_shape(SequenceEntry& entry, TagState& state,
                                   const SequenceNode& node) {
  // Fixed at create: printed the same from the first range on, and set
  // before that range joins the buffer (whose add publishes it). A node
  // that says otherwise later (made again after a loss of ZooKeeper's data,
  // or written by hand) is not printed with a template it was not taken
  // under: its range is a gap.
  if (state.shape_known && node.number_template != state.shape.number_template) {
    spdlog::error(
        "sequences: \"{}\" is printed with '{}' here, and its node now says '{}': "
        "the range is not used (a gap) and no more are taken here; restart this daemon to take "
        "the new template up",
        entry.tag, state.shape.number_template, node.number_template);
    state.shape_conflict = true;  // and no more are taken: each would be a gap
    return false;
  }
  state.shape.end = node.end;
  state.shape.step = node.step;      // a tag made again after a loss takes the same ranges
  state.shape.strict = node.strict;  // a strict tag made again after a loss is strict too
  if (state.shape_known) return true;
  state.shape_known = true;
  state.shape.number_template = node.number_template;
  if (node.number_template.empty()) return true;
  auto parsed = NumberTemplate::parse(node.number_template, PeriodReset::none);
  if (!parsed) return false;  // decode_sequence refused such a node already
  entry.set_printed(parsed.value().fill(Period{}));
  return true;
}

bool SequenceSupplier::settle(SequenceEntry& entry, TagState& state) {
  const auto now = BootClock::now();
  if (!zk_ || !zk_->connected() || zk_->connected_since() + options_.restore_grace > now ||
      held_for_grace(now)) {
    return false;
  }
  // The node read after the grace (the check above before it).
  if (!check_floor(entry, state)) return false;  // read again on the next pass
  const SequenceRange range = *state.settling;
  state.settling.reset();
  if (entry.frozen.load(std::memory_order_acquire)) {
    spdlog::warn("sequences: \"{}\": [{}, {}) is not used: frozen while it waited (a gap)",
                 entry.tag, range.start, range.end);
    update_exhausted(entry, state);
    return true;
  }
  const bool added = entry.buffer.add(range);
  update_exhausted(entry, state);  // once its numbers are in the buffer
  if (!added) return false;        // closed: stopping
  entry.waiting.wake_all();
  entry.gauges.left.fetch_add(range.size(), std::memory_order_relaxed);
  spdlog::debug("sequences: \"{}\": [{}, {}) handed out from now", entry.tag, range.start,
                range.end);
  return true;
}

}  // namespace snowflake::coord
