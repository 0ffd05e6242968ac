#include "snowflake/sequence_store/sequence_supplier.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/thread_name.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

SequenceSupplier::SequenceSupplier(SequenceSupplierOptions options, SequenceRegistry& registry)
    : options_(std::move(options)),
      registry_(registry),
      taker_{options_.run, 0},
      refusal_watch_(options_.zookeeper, [this] { registry_.request_refill(); }),
      record_{options_.owner, {}} {}

SequenceSupplier::~SequenceSupplier() { stop(); }

void SequenceSupplier::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void SequenceSupplier::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  registry_.request_refill();  // wake the thread
  thread_.join();
}

void SequenceSupplier::run() {
  name_this_thread("sequences");
  while (!stopping_.load(std::memory_order_acquire)) {
    freeze_on_loss();  // at once, with or without ZooKeeper
    recheck_when_settled();
    if (ensure_session()) {
      if (!restore_owed_.empty() || restore_publish_owed_) restore_held();
      settle_loss_alone();
      if (relist_.exchange(false)) list_tags();
      if (relist_strict_.exchange(false)) list_strict_tags();
      if (alive_changed_.exchange(false)) {
        for (auto& [tag, ss] : stricts_) ss.look_at = {};  // judged again
      }
      forget_previous_run();
      check_changed_floors();
      for (SequenceEntry* entry : registry_.entries()) {
        if (stopping_.load(std::memory_order_acquire)) break;
        if (entry->periodic.load(std::memory_order_relaxed)) {
          supply_periodic(*entry);
        } else if (entry->strict.strict()) {
          supply_strict(*entry, tags_[entry->tag]);
        } else {
          supply(*entry, tags_[entry->tag]);
        }
      }
      let_go_of_over_periods();
      publish_if_due();
    }
    registry_.wait_for_request(backoff_.count() > 0 ? backoff_ : options_.period);
  }
  give_back_all();
  end_session();
  set_connected(false);
}

std::vector<SequenceEntry*> SequenceSupplier::supplied_entries() const {
  std::vector<SequenceEntry*> all = registry_.entries();
  for (const auto& [name, slot] : period_slots_) all.push_back(&slot->entry);
  return all;
}

SequenceEntry* SequenceSupplier::entry_of(std::string_view tag) const {
  if (SequenceEntry* e = registry_.find(tag)) return e;
  const auto period = period_slots_.find(tag);
  return period == period_slots_.end() ? nullptr : &period->second->entry;
}

void SequenceSupplier::end_session() {
  std::lock_guard lock(session_mutex_);
  if (zk_) {
    requests_of_ended_ += zk_->requests_sent();
    zk_->remove_node_watcher(watcher_id_);  // a shared session outlives our part in it
  }
  zk_.reset();
}

std::uint64_t SequenceSupplier::requests_sent() const {
  std::lock_guard lock(session_mutex_);
  return requests_of_ended_ + (zk_ ? zk_->requests_sent() : 0);
}

bool SequenceSupplier::take_up_shared_session() {
  auto current = options_.shared_session();
  if (current != zk_) {  // the coordinator's first, or the one it replaced ours with
    end_session();
    if (!current || current->gone()) {
      set_connected(false);
      return false;
    }
    adopt(std::move(current));
  }
  if (!zk_ || zk_->gone()) {
    set_connected(false);  // none yet, or gone: the coordinator makes the next one
    return false;
  }
  set_connected(zk_->connected());
  return true;
}

bool SequenceSupplier::ensure_session() {
  if (options_.shared_session) return take_up_shared_session();
  if (zk_ && !zk_->gone()) {
    if (auto fresh = refusal_watch_.replacement(*zk_)) {
      end_session();  // then taken up below, like a session that expired
      adopt(std::move(fresh));
      return true;
    }
    set_connected(zk_->connected());
    return true;
  }
  if (zk_) spdlog::warn("sequences: the ZooKeeper session is gone; opening a new one");
  end_session();
  set_connected(false);
  auto session = ZkSession::connect(options_.zookeeper);
  if (!session) {
    backoff_ =
        std::min(options_.max_backoff, std::max(std::chrono::milliseconds(100), backoff_ * 2));
    spdlog::warn(
        "sequences: cannot reach ZooKeeper ({}); buffered numbers are still served, "
        "retrying in {} ms",
        session.error().message(), backoff_.count());
    return false;
  }
  backoff_ = std::chrono::milliseconds(0);
  adopt(std::move(session).value());
  return true;
}

void SequenceSupplier::adopt(std::shared_ptr<ZkSession> session) {
  {
    std::lock_guard lock(session_mutex_);
    zk_ = std::move(session);
  }
  const std::string dir = tree::sequences_dir(options_.root);
  const std::string owners = tree::sequence_owners_dir(options_.root);
  const std::string alive = tree::alive_dir(options_.root) + "/";
  // Added beside the coordinator's on a shared session; every event reaches
  // both, and each takes its own paths.
  watcher_id_ = zk_->add_node_watcher([this, dir, owners, alive](const std::string& path) {
    if (path == dir) {
      relist_.store(true);
    } else if (path == owners) {
      relist_strict_.store(true);
    } else if (path.starts_with(owners + "/")) {
      std::lock_guard lock(changed_mutex_);
      owners_changed_.insert(path.substr(owners.size() + 1));
    } else if (path.starts_with(alive)) {
      alive_changed_.store(true);  // an owner's run came or went
    } else if (auto tag = tree::sequence_tag_of(options_.root, path)) {
      // The tag's floor child (a raise, a freeze), or its node (watched
      // while the tag is exhausted: a give-back).
      std::lock_guard lock(changed_mutex_);
      changed_tags_.insert(std::move(*tag));
    }
    registry_.request_refill();
  });
  relist_.store(true);
  relist_strict_.store(true);
  {
    // A new session has none of the old one's watches, and a floor may have
    // risen while none was set.
    std::lock_guard lock(changed_mutex_);
    for (const auto& [tag, ss] : stricts_) owners_changed_.insert(tag);
    for (const auto& [tag, held] : record_.tags) changed_tags_.insert(tag);
    // A frozen or exhausted tag waits for its watch too (a raise thaws it,
    // a give-back makes room), held or not.
    for (const SequenceEntry* e : supplied_entries()) {
      if (e->exhausted.load(std::memory_order_relaxed) || e->frozen.load()) {
        changed_tags_.insert(e->tag);
      }
    }
  }
  set_connected(true);
}

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

void SequenceSupplier::set_connected(bool connected) {
  if (registry_.connected.exchange(connected, std::memory_order_acq_rel) && !connected) {
    registry_.wake_all_waiting();  // they answer now: no range will come
  }
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
    // Made again if gone: as this daemon knew it (its template and end), in
    // ranges of what it held.
    const auto known = tags_.find(tag);
    SequenceNode like = known != tags_.end() ? known->second.shape : SequenceNode{};
    like.step = std::max<std::int64_t>(1, held.to - held.from);
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

void SequenceSupplier::list_tags() {
  auto names = zk_->try_children(tree::sequences_dir(options_.root), /*watch=*/true);
  if (!names) {
    relist_.store(true);
    failed(names.error(), "cannot list the sequences");
    return;
  }
  if (!names.value()) {
    // No sequence yet (`seq create` makes the directory; the daemon writes
    // nothing until a range is taken): watch for the directory instead.
    auto there = zk_->exists(tree::sequences_dir(options_.root), /*watch=*/true);
    if (!there) {
      relist_.store(true);
      failed(there.error(), "cannot watch for sequences");
    } else if (there.value()) {
      relist_.store(true);  // created meanwhile
    } else {
      registry_.listed.store(true, std::memory_order_release);  // none there
    }
    return;
  }
  for (auto& [tag, ps] : periodics_) ps.listed_keys.clear();
  for (const std::string& tag : *names.value()) {
    if (const auto at = tag.find('@'); at != std::string::npos) {
      // A period's node: what the removal of old periods looks at.
      const auto ps = periodics_.find(std::string_view(tag).substr(0, at));
      if (ps != periodics_.end()) {
        ps->second.listed_keys.insert(tag.substr(at + 1));
        ps->second.removal_next_ms = 0;  // looked at again
      }
      continue;
    }
    if (!is_valid_name(tag) || registry_.find(tag)) continue;
    if (!registry_.add(tag)) {
      spdlog::warn(
          "sequences: \"{}\" is not served: this daemon serves at most {} sequences "
          "(sequences.max_tags)",
          tag, registry_.capacity());
      continue;
    }
    spdlog::info("sequences: serving \"{}\"", tag);
  }
  registry_.listed.store(true, std::memory_order_release);
}

void SequenceSupplier::forget_previous_run() {
  if (!zk_ || previous_forgotten_ || !options_.previous_run ||
      *options_.previous_run == options_.run) {
    return;
  }
  auto removed = remove_holder(*zk_, options_.root, *options_.previous_run);
  if (!removed) {
    failed(removed.error(), "cannot delete the previous run's holder node");
    return;
  }
  previous_forgotten_ = true;
  if (removed.value()) {
    spdlog::info(
        "sequences: deleted the holder node of this state directory's previous run {} (it "
        "ended without a clean stop: what it held is a gap)",
        *options_.previous_run);
  }
}

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

bool SequenceSupplier::publish() {
  if (!zk_) return false;
  for (auto& [tag, held] : record_.tags) {
    const SequenceEntry* entry = entry_of(tag);
    if (!entry) continue;
    const SequenceBufferState buffered = entry->buffer.state();
    // `from` moves only in acknowledge_drops(): after the replies that may
    // hold a number below it are written.
    held.left = buffered.current_left + buffered.queued;
    held.rate = entry->gauges.rate.load(std::memory_order_relaxed);
  }
  auto written = publish_holder(*zk_, options_.root, options_.run, record_);
  if (!written) {
    failed(written.error(), "cannot write this run's holder node");
    return false;
  }
  record_written_ = true;
  last_publish_ = BootClock::now();
  return true;
}

void SequenceSupplier::publish_if_due() {
  if (record_.tags.empty() || !zk_ || !zk_->connected()) return;
  if (record_written_ && BootClock::now() - last_publish_ < options_.publish_period) {
    return;
  }
  publish();
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

bool SequenceSupplier::held_for_grace(BootClock::time_point read_at) {
  if (options_.restore_grace.count() == 0) return false;
  const auto since = zk_->connection_answering_since();
  if (!since) return true;
  return read_at < *since + options_.restore_grace && !vouched_in_this_run();
}

bool SequenceSupplier::vouched_in_this_run() {
  if (!zk_->on_first_connection()) return false;
  if (vouch_session_ != zk_->session_id()) {
    auto root = zk_->get(options_.root);
    if (!root) return false;  // unread: held, judged again at the grace's end
    vouch_ = recorded_vouch(root.value().data);
    vouch_session_ = zk_->session_id();
  }
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  return vouch_reaches(vouch_, zk_->session_id(), now_ms);
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

void SequenceSupplier::give_back_all() {
  for (SequenceEntry* entry : supplied_entries()) {
    entry->buffer.close();
    entry->waiting.wake_all();  // nothing more comes: they answer now
    // A range still in its grace is the last one taken: given back with the
    // buffer's rest, or alone.
    const auto& settling = tags_[entry->tag].settling;
    auto first_unused = entry->buffer.state().first_unused;
    if (!first_unused && settling && !entry->frozen.load(std::memory_order_acquire)) {
      first_unused = settling->start;
    }
    if (entry->strict.owned_generation() != 0 || named_owner(*entry)) {
      // Ours (confirmed, or claimed and not yet): the next owner starts
      // where we stopped, once released.
      entry->strict.disown();
      if (zk_ && !zk_->gone() && zk_->connected()) release_strict(*entry, first_unused);
      continue;
    }
    if (!first_unused) continue;
    if (!zk_ || zk_->gone() || !zk_->connected()) {
      spdlog::info("sequences: \"{}\": [{}, ...) not given back (ZooKeeper away): a gap",
                   entry->tag, *first_unused);
      continue;
    }
    auto back = coord::give_back(*zk_, options_.root, entry->tag, options_.run, *first_unused);
    if (!back) {
      failed(back.error(), fmt::format("cannot give back the rest of \"{}\"", entry->tag));
    } else if (back.value()) {
      spdlog::info("sequences: \"{}\": gave back the numbers from {}", entry->tag, *first_unused);
    } else {
      spdlog::info(
          "sequences: \"{}\": numbers from {} not given back (a range was taken after "
          "ours): a gap",
          entry->tag, *first_unused);
    }
  }
  // Every buffer is closed: this run holds nothing any more.
  if (record_.tags.empty() || !zk_ || zk_->gone() || !zk_->connected()) return;
  if ((!restore_owed_.empty() || restore_publish_owed_) && !restore_held()) {
    // A loss not yet told to ZooKeeper: the holder node is what says what
    // this run handed out (seq list, cluster fence), so it stays.
    spdlog::warn("sequences: this run's holder node is kept: a loss is not yet recorded");
    return;
  }
  if (auto removed = remove_holder(*zk_, options_.root, options_.run); !removed) {
    failed(removed.error(), "cannot delete this run's holder node");
  }
}

void SequenceSupplier::failed(const CoordError& e, const std::string& what) {
  spdlog::warn("sequences: {}: {}", what, e.message);
  // Kept until the next look (ensure_session): the rest of this pass still
  // calls through it, and fails there as this call did.
  if (zk_ && zk_->gone()) set_connected(false);
}

}  // namespace snowflake::coord
