// The SequenceSupplier's loop (sequence_supplier.hpp): started and stopped,
// its ZooKeeper session (its own, or the coordinator's taken up), the tags
// listed, what it holds published, and every range given back at the end.
// A tag's ranges are in sequence_supplier_ranges.cpp; losses of history, in
// sequence_supplier_losses.cpp; periods and strict tags, in
// sequence_periods.cpp and sequence_strict.cpp.

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
      segment_taker_{options_.run + ".segments", 0},
      grace_(options_.restore_grace, options_.root),
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
      serve_segments();
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
    } else {
      serve_segments();  // refused at once: no session
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

void SequenceSupplier::set_connected(bool connected) {
  if (registry_.connected.exchange(connected, std::memory_order_acq_rel) && !connected) {
    registry_.wake_all_waiting();  // they answer now: no range will come
  }
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
