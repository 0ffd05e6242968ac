// The SequenceSupplier's segments for other processes (sequences/
// segment_calls.hpp: CosId's segment distributor). Each is a take of
// exactly the step asked, under the rules a range of the buffer is taken by
// (sequence_supplier_ranges.cpp's supply): the take's zxid follows the
// history seen, its start is above every range this run took since the last
// loss, it is named in the holder node and the tag's floor read again
// before it is answered, and over a connection still in its restore grace it
// is not answered at all (a gap; the caller asks again). Its takes are
// written under "<run>.segments", so that a clean stop's give-back
// (plan_give_back: the run's own adjoining takes) never moves the counter
// back below numbers another process holds.

#include <spdlog/spdlog.h>

#include <chrono>

#include "snowflake/sequence_store/sequence_supplier.hpp"

namespace snowflake::coord {

namespace {

SegmentRefusal refusal(SegmentRefusal::Why why, std::string message) {
  return SegmentRefusal{why, std::move(message)};
}

}  // namespace

void SequenceSupplier::serve_segments() {
  auto calls = registry_.segments.take_all();
  for (const auto& call : calls) {
    if (call->abandoned()) continue;  // nobody would be told: nothing is taken
    if (stopping_.load(std::memory_order_acquire)) {
      call->finish(refusal(SegmentRefusal::Why::unavailable, "this daemon is stopping"));
      continue;
    }
    call->finish(take_segment(call->tag(), call->step()));
  }
}

std::variant<SequenceEntry*, SegmentRefusal> SequenceSupplier::segment_entry(
    const std::string& tag) {
  using Why = SegmentRefusal::Why;
  const bool connected = zk_ && zk_->connected();
  SequenceEntry* entry = registry_.find(tag);
  if (!entry && connected) {
    list_tags();  // made since the last listing, its watch not in yet
    entry = registry_.find(tag);
  }
  if (!entry && (!connected || !registry_.listed.load(std::memory_order_acquire))) {
    // Not read from ZooKeeper yet: it may well exist (GET /seq answers 503 too).
    return refusal(Why::unavailable,
                   fmt::format("the sequences are not read from ZooKeeper yet: no segment of "
                               "\"{}\" now",
                               tag));
  }
  if (!entry) {
    return refusal(Why::no_sequence,
                   fmt::format("no sequence \"{}\" (snowflaked seq create {} makes it)", tag, tag));
  }
  if (entry->periodic.load(std::memory_order_acquire) || entry->strict.strict()) {
    return refusal(Why::not_plain,
                   fmt::format("sequence \"{}\" {}: its numbers are handed out by GET /seq/{} "
                               "only, never in segments",
                               tag,
                               entry->strict.strict() ? "is strict (one owner, in order)"
                                                      : "restarts each period",
                               tag));
  }
  const TagState& state = tags_[tag];
  if (entry->frozen.load(std::memory_order_acquire)) {
    return refusal(Why::frozen,
                   fmt::format("sequence \"{}\" is frozen: ZooKeeper lost or rolled back some of "
                               "the cluster's history (seq raise thaws it)",
                               tag));
  }
  if (state.shape_conflict || !connected) {
    return refusal(Why::unavailable,
                   fmt::format("no segment of \"{}\" can be taken now (ZooKeeper away)", tag));
  }
  // A new connection's grace: refused before anything is taken (the
  // buffer's range would wait it out; a segment's caller asks again).
  if (const auto left = grace_.left_known(*zk_); left > BootClock::duration::zero()) {
    return refusal(Why::unavailable,
                   fmt::format("a new ZooKeeper connection, in its restore grace for {} ms more "
                               "(coordinator.restore_grace_ms): ask again",
                               std::chrono::ceil<std::chrono::milliseconds>(left).count()));
  }
  return entry;
}

SegmentRefusal SequenceSupplier::segment_refused(SequenceEntry& entry, TagState& state,
                                                 const CoordError& e) {
  using Why = SegmentRefusal::Why;
  const std::string& tag = entry.tag;
  take_refused(entry, state, e);  // learns what a buffer's take would (frozen, strict, ...)
  // Gone though we held some: a loss, which froze it (not "make it").
  if (entry.frozen.load(std::memory_order_acquire)) {
    return refusal(Why::frozen, fmt::format("sequence \"{}\" is frozen: ZooKeeper lost some of "
                                            "the cluster's history (seq raise thaws it)",
                                            tag));
  }
  switch (e.code) {
    case CoordErrc::frozen:
      return refusal(Why::frozen, e.message);
    case CoordErrc::sequence_exhausted:
      return refusal(Why::exhausted, e.message);
    case CoordErrc::no_sequence:
      return refusal(Why::no_sequence, e.message);
    case CoordErrc::periodic:
    case CoordErrc::strict:
      return refusal(Why::not_plain, e.message);
    default:
      return refusal(Why::unavailable, e.message);
  }
}

SegmentCall::Outcome SequenceSupplier::take_segment(const std::string& tag, std::int64_t step) {
  using Why = SegmentRefusal::Why;
  auto found = segment_entry(tag);
  if (auto* no = std::get_if<SegmentRefusal>(&found)) return std::move(*no);
  SequenceEntry* entry = std::get<SequenceEntry*>(found);
  TagState& state = tags_[tag];
  const std::int64_t before = options_.history ? options_.history->highest_zxid() : 0;
  SequenceNode taken_from;
  auto taken = take_range(*zk_, options_.root, tag, segment_taker_, step, &taken_from);
  if (!taken) return segment_refused(*entry, state, taken.error());
  const SequenceTake& range = taken.value();
  const auto gap = [&](std::string why) {
    spdlog::warn("sequences: \"{}\": the segment [{}, {}) is not handed out ({}): a gap", tag,
                 range.start, range.end, why);
    return refusal(
        Why::unavailable,
        fmt::format("the segment of \"{}\" taken is not handed out ({}): ask again", tag, why));
  };
  if (!history_follows(before, "take of a segment")) return gap("ZooKeeper's history went back");
  if (!learn_shape(*entry, state, taken_from)) return gap("the sequence's template changed");
  if (state.taken_to > range.start) {
    report_loss(HistoryLoss::rolled_back,
                fmt::format("\"{}\" handed us [{}, {}), though this daemon took up to {}", tag,
                            range.start, range.end, state.taken_to));
    return gap("ZooKeeper's counter went back");
  }
  if (range.end - range.start < step) {
    // At the end of a bounded sequence: CosId counts its segment down from
    // the maximum it is told, so a shorter one would reach below it. Given
    // back if it is still the newest take (else a gap), for a smaller step.
    // (taken_to stays: a give-back whose reply was lost may have landed,
    // and the next take then starts at range.start, no rollback.)
    (void)give_back(*zk_, options_.root, tag, segment_taker_.run, range.start);
    check_floor(*entry, state);
    return refusal(Why::exhausted,
                   fmt::format("sequence \"{}\" has {} number(s) left, fewer than the step of {}: "
                               "ask for {} at most",
                               tag, range.end - range.start, step, range.end - range.start));
  }
  state.taken_to = range.end;
  HeldSequence& held = record_.tags[tag];
  if (held.to == 0) held.from = range.start;
  held.to = range.end;
  record_written_ = false;
  const auto read_at = BootClock::now();
  state.joining = true;
  const bool named = publish() && check_floor(*entry, state);
  state.joining = false;
  update_exhausted(*entry, state);
  if (!named) return gap("the holder node or the floor could not be read");
  if (entry->frozen.load(std::memory_order_acquire)) return gap("frozen meanwhile");
  // A raise that landed between the take and the floor's read: acknowledged
  // by check_floor (the buffer dropped through it), so nothing at or below
  // it may go out now.
  if (state.dropped_through >= range.start) return gap("seq raise lifted the floor into it");
  if (held_for_grace(read_at)) {
    return gap(
        "taken over a ZooKeeper connection still in coordinator.restore_grace_ms, whose counter "
        "may be a restored copy's");
  }
  // A tag's --step larger than the step asked: the rest of the range is a gap.
  const SegmentGrant grant{range.start, range.start + step - 1};
  entry->gauges.segment_numbers.fetch_add(static_cast<std::uint64_t>(step),
                                          std::memory_order_relaxed);
  entry->gauges.fetches.fetch_add(1, std::memory_order_relaxed);
  // Said for the restore runbook: a segment's numbers are used from the
  // caller's memory, after this run (and its holder node) may be gone.
  spdlog::info("sequences: \"{}\": segment [{}, {}] handed out", tag, grant.first, grant.last);
  return grant;
}

}  // namespace snowflake::coord
