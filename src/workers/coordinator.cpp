#include "snowflake/workers/coordinator.hpp"
#include "snowflake/base/clock.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "recycle_strategy.hpp"
#include "sequential_strategy.hpp"
#include "snowflake/base/thread_name.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/state/cluster_file.hpp"

namespace snowflake::coord {

namespace {

using std::chrono::milliseconds;
constexpr milliseconds kMinBackoff{100};
constexpr milliseconds kMaxBackoff{5'000};

std::string host_of(const std::string& advertise) {
  return advertise.substr(0, advertise.rfind(':'));
}

std::uint32_t port_of(const std::string& advertise) {
  return static_cast<std::uint32_t>(std::stoul(advertise.substr(advertise.rfind(':') + 1)));
}

FenceGauge gauge_of(const std::optional<ClusterFence>& fence) {
  if (!fence) return FenceGauge::none;
  return fence->kind == FenceKind::new_cluster ? FenceGauge::new_cluster : FenceGauge::history_lost;
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, const IdLayout& layout, WorkerSlot& slot,
                         Lease& lease, CoordinationGauges& gauges, FatalHandler on_fatal)
    : options_(std::move(options)),
      layout_(layout),
      slot_(slot),
      lease_(lease),
      gauges_(gauges),
      on_fatal_(std::move(on_fatal)),
      token_(OwnerToken::fresh(host_of(options_.advertise), port_of(options_.advertise))) {}

Coordinator::~Coordinator() { shutdown(); }

Result<void, std::string> Coordinator::start() {
  auto dir = state::StateDir::open(options_.state_dir);
  if (!dir) return dir.error();
  state_dir_ = std::move(dir).value();
  if (!state_dir_->knows_boot()) {
    spdlog::warn(
        "cannot read this machine's boot ID (/proc/sys/kernel/random/boot_id; is /proc "
        "restricted, e.g. ProcSubset=pid?): a restart after a crash cannot prove its "
        "previous run dead, so it {}",
        options_.strategy == CoordinatorType::recycle
            ? "claims another worker ID and the old one waits for reclaim_after_ms"
            : "waits out the previous run's lease, not ready");
  }
  // Our previous run's record counts only if this machine proves that run
  // dead: a copied state directory carries the same record.
  std::optional<state::StateRecord> predecessor;
  if (const auto& r = state_dir_->previous(); r && r->strategy == options_.strategy &&
                                              r->root == options_.root && r->owner &&
                                              r->layout == layout_.settings()) {
    if (state_dir_->proves_writer_dead(*r)) {
      predecessor = r;
    } else {
      spdlog::info(
          "{} names worker ID {}, but not as written by a run of this machine since its "
          "boot in this directory; it proves nothing (a copy?), so that worker ID is "
          "not taken over",
          state_dir_->file_path(), r->worker_id);
    }
  }
  strategy_ = make_strategy(predecessor);
  reapers_dir_ = strategy_->reapers_dir();
  claimers_dir_ = strategy_->claimers_dir();
  // The cluster this directory has been part of: if ZooKeeper comes back
  // without it, this daemon knows it existed.
  auto known = state::load_cluster_id(state_dir_->dir(), options_.root);
  if (known) spdlog::debug("{} names cluster {}", state_dir_->dir(), *known);
  history_ = std::make_unique<ClusterHistory>(std::move(known), [this](const std::string& id) {
    if (auto saved = state::save_cluster_id(state_dir_->dir(), options_.root, id); !saved) {
      spdlog::warn("cannot record the cluster's ID in the state directory: {}", saved.error());
    }
  });
  // A fresh session that comes up while ours cannot reconnect wakes us.
  refusal_watch_ = std::make_unique<RefusedSessionWatch>(options_.zookeeper, [this] {
    {
      std::lock_guard lock(mutex_);
      ++root_events_;
    }
    wake_.notify_all();
  });
  // A loss the supplier notices stops our IDs at once, whatever our thread
  // is doing; the thread then fences the cluster.
  history_->on_report([this] {
    lease_.hold_for_history(true);
    {
      std::lock_guard lock(mutex_);
      ++root_events_;
    }
    wake_.notify_all();
  });
  const auto& s = options_.settings;
  reservation_ = std::make_unique<state::TimeReservation>(*state_dir_, s.persist_interval, clock_);
  reservation_->start();
  gauges_.zookeeper.store(ZkConnection::connecting);
  mark_progress();  // its first step begins now
  thread_running_.store(true, std::memory_order_release);
  heartbeat_thread_ = std::thread([this] { run(); });
  return outcome::success();
}

std::unique_ptr<WorkerStrategy> Coordinator::make_strategy(
    std::optional<state::StateRecord> predecessor) {
  const auto& s = options_.settings;
  if (options_.strategy == CoordinatorType::recycle) {
    return std::make_unique<RecycleStrategy>(
        RecycleSettings{
            options_.root, layout_.max_worker_id(), s.lease_timeout, s.reclaim_after,
            options_.zookeeper.connect_timeout,
            2 * options_.zookeeper.session_timeout + options_.zookeeper.connect_timeout,
            2 * options_.zookeeper.session_timeout + options_.zookeeper.connect_timeout},
        token_, std::move(predecessor));
  }
  return std::make_unique<SequentialStrategy>(options_.root, options_.advertise,
                                              layout_.max_worker_id(), s.lease_timeout, token_,
                                              predecessor);
}

bool Coordinator::wait_for(milliseconds d) {
  std::unique_lock lock(mutex_);
  // A change of the root (a raised floor) ends the wait too: it is read at
  // once, not at the next heartbeat.
  wake_.wait_for(lock, d, [this] {
    return stopping_ || root_events_ != root_events_seen_ ||
           reaper_events_ != reaper_events_seen_ || claim_events_ != claim_events_seen_;
  });
  return !stopping_;
}

bool Coordinator::idle_for(milliseconds d) {
  mark_progress(d);
  const bool go_on = wait_for(d);
  mark_progress();
  return go_on;
}

void Coordinator::mark_progress(milliseconds d) noexcept {
  const auto due = clock_.monotonic().time_since_epoch() + d;
  progress_due_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(due).count(),
                         std::memory_order_relaxed);
}

bool Coordinator::heartbeat_thread_healthy(milliseconds limit) const {
  if (!thread_running_.load(std::memory_order_acquire)) return false;
  const std::int64_t due = progress_due_ns_.load(std::memory_order_relaxed);
  const auto now = clock_.monotonic().time_since_epoch();
  return now - std::chrono::nanoseconds(due) <= limit;
}

void Coordinator::run() {
  name_this_thread("heartbeat");
  mark_progress();
  struct Ended {
    Coordinator& c;
    ~Ended() { c.thread_running_.store(false, std::memory_order_release); }
  } ended{*this};
  backoff_ = kMinBackoff;
  const milliseconds max_backoff = std::min(kMaxBackoff, options_.settings.heartbeat_interval);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    const Step step = tick();
    gauges_.zookeeper.store(zk_ && zk_->connected() ? ZkConnection::connected
                                                    : ZkConnection::connecting);
    switch (step) {
      case Step::fatal:
        return;
      case Step::retry:
        if (!idle_for(backoff_)) return;
        backoff_ = std::min(backoff_ * 2, max_backoff);
        break;
      case Step::ok:
        backoff_ = kMinBackoff;
        break;
      case Step::idle:
      case Step::lost:
        break;
    }
  }
}

Coordinator::Step Coordinator::tick() {
  if (!zk_ || zk_->gone()) return connect();
  if (auto fresh = refusal_watch_->replacement(*zk_)) {
    set_session(std::move(fresh));
    adopt_session();
  }
  // A loss the sequence supplier noticed on its own session: ours too.
  if (history_->episodes() != episodes_handled_) act_on_loss();
  if (!root_checked_) {
    if (const Step s = check_root(); s != Step::ok) return s;
  }
  if ((fence_owed_ || freeze_owed_) && !settle_loss()) return Step::retry;
  bool root_changed = false;
  bool reaper_changed = false;
  {
    std::lock_guard lock(mutex_);
    root_changed = root_events_ != root_events_seen_;
    root_events_seen_ = root_events_;
    reaper_changed = reaper_events_ != reaper_events_seen_;
    reaper_events_seen_ = reaper_events_;
    if (claim_events_ != claim_events_seen_) strategy_->claim_watch_fired();
    claim_events_seen_ = claim_events_;
  }
  if (root_changed && !read_migration_floor()) return Step::retry;
  confirm_migration_floor();
  if (reaper_changed) {
    // The candidate below ours ended: the role may be ours now, and a stale
    // node may have waited for it since its holder died.
    strategy_->reaper_watch_fired();
    reap(std::nullopt);
  }
  if (!generator_) return acquire();
  const auto now = clock_.monotonic();
  if (now < next_heartbeat_) {
    idle_for(std::chrono::duration_cast<milliseconds>(next_heartbeat_ - now) + milliseconds(1));
    return Step::idle;
  }
  return renew();
}

std::shared_ptr<ZkSession> Coordinator::session() const {
  std::lock_guard lock(session_mutex_);
  return zk_;
}

void Coordinator::set_session(std::shared_ptr<ZkSession> session) {
  std::lock_guard lock(session_mutex_);
  zk_ = std::move(session);
}

Coordinator::Step Coordinator::connect() {
  if (zk_) {
    spdlog::warn(
        "ZooKeeper session expired; opening a new one (ownership of worker ID {} is "
        "checked by the next heartbeat)",
        generator_ ? std::to_string(worker_id_) : std::string("none"));
    set_session(nullptr);
  }
  auto session = ZkSession::connect(options_.zookeeper);
  if (!session) {
    log_retry(fmt::format("cannot reach ZooKeeper at {}: {}", options_.zookeeper.hosts,
                          session.error().message()));
    return Step::retry;
  }
  set_session(std::move(session).value());
  adopt_session();
  return Step::ok;
}

void Coordinator::adopt_session() {
  root_checked_ = false;  // a new session may find ZooKeeper has lost the cluster
  // Added, not set: the sequence supplier may have added its own already.
  zk_->add_node_watcher([this](const std::string& path) {
    const auto under = [&path](const std::string& dir) {
      return !dir.empty() && path.size() > dir.size() && path.starts_with(dir) &&
             path[dir.size()] == '/';
    };
    const bool root = path == options_.root;
    const bool reaper = under(reapers_dir_);
    const bool claimer = under(claimers_dir_);
    if (!root && !reaper && !claimer) return;
    {
      std::lock_guard lock(mutex_);
      ++(root ? root_events_ : reaper ? reaper_events_ : claim_events_);
    }
    wake_.notify_all();
  });
  // A new session has no watch yet, and must confirm the floor itself.
  {
    std::lock_guard lock(mutex_);
    ++root_events_;
  }
  gauges_.sessions.fetch_add(1, std::memory_order_relaxed);
  gauges_.reaper.store(false, std::memory_order_relaxed);  // the role is a session's
  spdlog::info("ZooKeeper session 0x{:x} established with {} (timeout {} ms)", zk_->session_id(),
               options_.zookeeper.hosts, zk_->negotiated_timeout().count());
  if (generator_) next_heartbeat_ = clock_.monotonic();  // re-verify ownership at once
}

Coordinator::Step Coordinator::check_root() {
  const RootIdentity identity{history_->known_id(), fence_length(options_.settings),
                              token_.describe(), false};
  // The config's forms at the first check (exit 3 if the cluster's
  // differ); later, the policy last read from the cluster, for a root made
  // again (cluster_root.hpp, RootForms, says why no later check compares).
  const RootForms forms =
      cluster_forms_ ? RootForms{*cluster_forms_, false} : RootForms{options_.forms, true};
  auto checked =
      check_cluster_root(*zk_, options_.root, layout_.settings(), options_.strategy,
                         options_.settings.datacenter_id, options_.opaque_key, identity, forms);
  if (!checked) return setback(checked.error(), "cannot check the cluster's root");
  root_checked_ = true;
  if (!cluster_forms_) cluster_forms_ = options_.forms;  // the cluster's, or recorded now
  const RootCheck& c = checked.value();
  switch (c.outcome) {
    case RootOutcome::wiped:
    case RootOutcome::replaced: {
      const std::string detail =
          c.outcome == RootOutcome::wiped
              ? fmt::format("{} was missing; made again for cluster {}, fenced", options_.root,
                            c.cluster_id)
              : fmt::format("{} names cluster {} (ours is {}); fenced", options_.root, c.cluster_id,
                            identity.known_id.value_or("?"));
      history_lost(c.outcome == RootOutcome::wiped ? HistoryLoss::wiped : HistoryLoss::replaced,
                   detail);
      fence_owed_ = false;  // written by the check, with the root
      break;
    }
    case RootOutcome::created:
      if (c.fence) {
        spdlog::warn(
            "made the cluster {} at {}, fenced until {} (ZooKeeper's time): nothing proves that "
            "no earlier cluster ran on this root (a ZooKeeper that lost its data looks new too). "
            "If it is new, `snowflaked cluster create` lifts the fence at once",
            c.cluster_id, options_.root, format_iso8601_ms(c.fence->until_ms));
      } else {
        spdlog::info("made the cluster {} at {}", c.cluster_id, options_.root);
      }
      break;
    case RootOutcome::identified:
      spdlog::info("the cluster at {} had no ID (made by 0.4.0 or earlier): it is {} from now on",
                   options_.root, c.cluster_id);
      break;
    case RootOutcome::joined:
      break;
  }
  history_->learn(c.cluster_id);
  gauges_.cluster.update([&](ClusterWords& w) { w.cluster_id = c.cluster_id; });
  apply_fence(c.fence);
  return Step::ok;
}

void Coordinator::history_lost(HistoryLoss kind, const std::string& detail) {
  history_->report(kind, detail, clock_.wall_ms());
  act_on_loss();
}

void Coordinator::act_on_loss() {
  // A later report of an episode acted on (the supplier's, then the root
  // found gone) does it all again, but counts no second loss.
  const bool new_episode = episodes_handled_ != history_->episodes();
  episodes_handled_ = history_->episodes();
  const auto loss = history_->last_loss();
  lease_.hold_for_history(true);
  if (generator_) {
    // As lose() does, but nothing is given back: what we held is ours only
    // in the history ZooKeeper lost.
    lease_.revoke();
    slot_.clear();
    set_held(std::nullopt);
    generator_->close();
    reservation_->detach(false);
    strategy_->forget(zk_.get());
    spdlog::error("worker ID {} dropped: ZooKeeper lost the cluster's history it was ours in",
                  worker_id_);
    generator_ = nullptr;
  }
  // The pool, our claim in progress, our predecessor's node: whatever the
  // strategy knew of ZooKeeper may be gone. It starts over.
  strategy_ = make_strategy(std::nullopt);
  if (new_episode) publish_loss(gauges_, loss);
  if (loss) {
    loss_reason_ = fmt::format(
        "ZooKeeper lost or rolled back the cluster's history ({}: {}), "
        "noticed by {}",
        to_string(loss->kind), loss->detail, token_.describe());
  }
  fence_owed_ = true;
  freeze_owed_ = true;
}

bool Coordinator::settle_loss() {
  if (fence_owed_) {
    auto fence =
        raise_fence(*zk_, options_.root,
                    {FenceKind::history_lost, fence_length(options_.settings), loss_reason_});
    if (!fence) {
      log_retry(fmt::format("cannot fence the cluster: {}", fence.error().message));
      if (fence.error().zk && fence.error().zk->code == ZkErrc::no_node) root_checked_ = false;
      return false;
    }
    fence_owed_ = false;
    apply_fence(fence.value());
  }
  if (freeze_owed_) {
    auto frozen = freeze_sequences(*zk_, options_.root);
    if (!frozen) {
      log_retry(fmt::format("cannot freeze the cluster's sequences: {}", frozen.error().message));
      return false;
    }
    freeze_owed_ = false;
    if (!frozen.value().empty()) {
      spdlog::warn("froze {} sequence(s) until seq raise lifts each past what was handed out",
                   frozen.value().size());
    }
  }
  history_->settle();
  // Every generator from here on is made above the fence (install).
  lease_.hold_for_history(false);
  spdlog::warn(
      "the cluster is fenced until {} (ZooKeeper's time): worker IDs are claimed again, "
      "and issue above it",
      fence_ ? format_iso8601_ms(fence_->until_ms) : std::string("now"));
  return true;
}

void Coordinator::apply_fence(const std::optional<ClusterFence>& fence) {
  if (fence == fence_) return;
  fence_ = fence;
  gauges_.fence_until_ms.store(fence ? fence->until_ms : INT64_MIN, std::memory_order_relaxed);
  gauges_.fence_kind.store(gauge_of(fence), std::memory_order_relaxed);
  gauges_.cluster.update([&](ClusterWords& w) {
    w.fence_reason = fence ? fence->reason : std::string();
    w.fence_at_ms = fence ? fence->at_ms : 0;
  });
  if (fence) {
    spdlog::info("the cluster's fence: no ID at or below {} ({}: {})",
                 format_iso8601_ms(fence->until_ms), to_string(fence->kind), fence->reason);
    if (generator_) generator_->raise_migration_floor(cluster_floor_ms());
  }
}

std::int64_t Coordinator::cluster_floor_ms() const {
  return std::max(migration_floor_ms_, fence_ ? fence_->until_ms : INT64_MIN);
}

std::optional<std::int64_t> Coordinator::fence_out_of_reach() const {
  if (!fence_) return std::nullopt;
  const std::int64_t reach = clock_.wall_ms() + options_.settings.max_boot_wait.count();
  return fence_->until_ms > reach ? std::optional(fence_->until_ms) : std::nullopt;
}

bool Coordinator::lease_runs() const {
  return last_confirmed_sent_ != BootClock::time_point{} &&
         clock_.monotonic() < last_confirmed_sent_ + options_.settings.lease_timeout;
}

bool Coordinator::held_for_grace(BootClock::time_point read_at) {
  const auto grace = options_.settings.restore_grace;
  if (grace.count() == 0) return false;
  const auto since = zk_->connection_answering_since();
  // Vouched for in the run this session was made in and has not left (its
  // first connection): the cluster is younger than the run, nothing in it
  // restored.
  if (since && zk_->on_first_connection() &&
      vouch_reaches(vouch_, zk_->session_id(), clock_.wall_ms())) {
    if (vouch_noted_session_ != zk_->session_id()) {
      vouch_noted_session_ = zk_->session_id();
      spdlog::info(
          "no restore grace: cluster create vouched for the cluster in this ZooKeeper server's "
          "run (at {}; session 0x{:x})",
          format_iso8601_ms(vouch_->at_ms), zk_->session_id());
    }
    return false;
  }
  // Not known: held, judged again by the next heartbeat.
  grace_end_ = since ? *since + grace : clock_.monotonic() + grace;
  return read_at < grace_end_;
}

bool Coordinator::history_follows(std::int64_t before, std::int64_t zxid, std::string_view what) {
  if (ClusterHistory::follows(before, zxid)) {
    history_->saw(zxid);
    return true;
  }
  history_lost(HistoryLoss::rolled_back,
               fmt::format("ZooKeeper answered our {} with zxid 0x{:x}, though we had seen 0x{:x}: "
                           "its history is behind what it had acknowledged",
                           what, zxid, before));
  return false;
}

void Coordinator::log_retry(const std::string& why) {
  if (why == last_retry_) {
    spdlog::debug("{}; retrying", why);
    return;
  }
  spdlog::warn("{}; retrying", why);
  last_retry_ = why;
}

std::string Coordinator::skew_description() const {
  return fmt::format(
      "the wall clock is {} ms off ZooKeeper's (more than coordinator.max_skew_ms {})",
      gauges_.clock_skew_ms.load(), options_.settings.max_skew.count());
}

void Coordinator::give_back_unused(const Ownership& owned) {
  if (auto back = strategy_->give_back(*zk_, owned.floor); !back) {
    spdlog::warn("could not return worker ID {}: {}", owned.worker_id, back.error().message);
    // Not ours to use: let go of its alive node now, so that its node is
    // reclaimed like any other whose owner went quiet.
    strategy_->forget(zk_.get());
  }
}

Coordinator::Skew Coordinator::judge_clock_skew(std::int64_t sent_wall_ms,
                                                std::int64_t received_wall_ms,
                                                std::int64_t zk_mtime_ms) {
  // A clock stepped back between the two readings: this measurement says
  // nothing (the next one will).
  if (received_wall_ms < sent_wall_ms) return skew_held_ ? Skew::held : Skew::within;
  // The server stamped its time somewhere between our two readings.
  const std::int64_t skew = (sent_wall_ms + received_wall_ms) / 2 - zk_mtime_ms;
  const std::int64_t uncertainty = (received_wall_ms - sent_wall_ms + 1) / 2;
  gauges_.clock_skew_ms.store(skew, std::memory_order_relaxed);
  const bool over = std::abs(skew) - uncertainty > options_.settings.max_skew.count();
  const bool first = !skew_checked_;
  skew_checked_ = true;
  if (over && first) return Skew::refuse_start;
  if (over != skew_held_) {
    if (over) {
      spdlog::error("{}; not issuing IDs until it is back within", skew_description());
    } else {
      spdlog::info("the wall clock agrees with ZooKeeper's again ({} ms); issuing IDs", skew);
    }
    skew_held_ = over;
    lease_.hold_for_clock_skew(over);
  }
  return over ? Skew::held : Skew::within;
}

std::int64_t Coordinator::ts_to_write(BootClock::time_point sent, std::int64_t wall_ms) const {
  if (!zookeeper_time_seen_) return wall_ms;
  const auto& [then, mtime_ms] = *zookeeper_time_seen_;
  // ZooKeeper stamped that mtime after `then`: its clock now is at most this.
  const std::int64_t zookeeper_now_at_most =
      mtime_ms + std::chrono::duration_cast<milliseconds>(sent - then).count();
  return std::min(wall_ms, zookeeper_now_at_most + options_.settings.max_skew.count());
}

void Coordinator::saw_zookeeper_time(BootClock::time_point sent, std::int64_t mtime_ms) {
  zookeeper_time_seen_.emplace(sent, mtime_ms);
  if (options_.zookeeper_clock) options_.zookeeper_clock->saw(sent, clock_.monotonic(), mtime_ms);
}

Coordinator::Step Coordinator::not_acquired(const CoordError& e, BootClock::time_point now) {
  if (e.fatal()) return setback(e, "");
  if (e.code != CoordErrc::in_line) {
    gauges_.pool_exhausted.store(e.code == CoordErrc::pool_exhausted);
  }
  if (e.code == CoordErrc::in_line) {
    // Woken by the watch on the claimer just ahead, not by the backoff;
    // a standby in line still reaps below when it holds that role.
    spdlog::debug("waiting to claim a worker ID: {}", e.message);
  } else if (e.code == CoordErrc::pool_exhausted) {
    log_retry(
        fmt::format("worker-ID pool exhausted: {}; not ready (IDs of dead daemons are "
                    "reclaimed {} ms after their last heartbeat)",
                    e.message, options_.settings.reclaim_after.count()));
  } else {
    log_retry(fmt::format("cannot acquire a worker ID: {}", e.message));
  }
  // An exhausted pool heals only if someone reaps it, owner or not.
  if (now >= next_reap_) {
    next_reap_ = now + options_.settings.heartbeat_interval;
    reap(std::nullopt);
  }
  return Step::retry;
}

Coordinator::Step Coordinator::acquire() {
  const auto now = clock_.monotonic();
  if (const auto until = fence_out_of_reach()) {
    log_retry(
        fmt::format("the cluster is fenced until {} ({}): a worker ID is claimed once that "
                    "is within coordinator.max_boot_wait_ms",
                    format_iso8601_ms(*until), fence_ ? fence_->reason : ""));
    if (now >= next_reap_) {
      next_reap_ = now + options_.settings.heartbeat_interval;
      reap(std::nullopt);
    }
    return Step::retry;
  }
  const std::int64_t zxid_before = history_->highest_zxid();
  const std::int64_t sent_wall = clock_.wall_ms();
  const AcquireRequest request{ts_to_write(now, sent_wall), now,
                               sent_wall + options_.settings.max_boot_wait.count()};
  auto acquired = strategy_->acquire(*zk_, request);
  const std::int64_t received_wall = clock_.wall_ms();
  if (!acquired) return not_acquired(acquired.error(), now);
  gauges_.pool_exhausted.store(false);
  last_retry_.clear();
  Ownership& owned = acquired.value();
  // A claim answered from a history behind ours is not installed: the loss
  // is acted on (the claim was dropped with the strategy) and we claim again.
  if (owned.fresh_zxid && !history_follows(zxid_before, *owned.fresh_zxid, "claim")) {
    return Step::retry;
  }
  // The migration floor, read after the claim on the same session: either
  // this read sees a floor raised meanwhile, or the claim came first and
  // `pool floor` waits for our confirmation (migration_floor.hpp).
  const auto read_at = clock_.monotonic();
  if (!read_migration_floor()) {
    give_back_unused(owned);
    return Step::retry;
  }
  // Claimed over a connection still in its grace: it may come from a
  // restored ZooKeeper's old records, whose fence (cluster fence, or a
  // daemon that lived through it) is not written yet.
  const bool held = held_for_grace(read_at);
  owned.floor = std::max(owned.floor, reservation_->reserved_until(owned.worker_id));
  if (owned.fresh_mtime_ms) saw_zookeeper_time(owned.sent, *owned.fresh_mtime_ms);
  if (owned.fresh_mtime_ms &&
      judge_clock_skew(sent_wall, received_wall, *owned.fresh_mtime_ms) == Skew::refuse_start) {
    give_back_unused(owned);
    fail(skew_description() + "; refusing to start. Fix the clock, then restart", false);
    return Step::fatal;
  }
  if (!install(owned, held)) {
    // The clock fell behind the floor after the claim checked it (a step
    // back): give the worker ID back and take another, never exit.
    give_back_unused(owned);
    return Step::retry;
  }
  // A claim recovered after a lost answer carries an old ZooKeeper time: the
  // clock check waits for a fresh write, the first heartbeat, now. A claim
  // in the grace has no lease yet: the heartbeat at its end grants it.
  next_heartbeat_ =
      owned.fresh_mtime_ms ? owned.sent + options_.settings.heartbeat_interval : clock_.monotonic();
  if (held) next_heartbeat_ = std::max(grace_end_, clock_.monotonic());
  return Step::ok;
}

std::optional<Coordinator::HeldWorker> Coordinator::held_worker() const {
  std::lock_guard lock(held_mutex_);
  return held_;
}

void Coordinator::set_held(std::optional<HeldWorker> held) {
  std::lock_guard lock(held_mutex_);
  held_ = std::move(held);
}

bool Coordinator::install(const Ownership& owned, bool held_for_grace) {
  GeneratorOptions g = options_.generator;
  if (owned.floor > 0) g.floor_ms = owned.floor;
  g.max_floor_wait = options_.settings.max_boot_wait;
  auto created = IdGenerator::create(layout_, owned.worker_id, g);
  if (!created) {
    const GenerateError& e = created.error();
    spdlog::warn("cannot issue IDs as worker {} ({}): {}; giving it back", owned.worker_id,
                 format_iso8601_ms(owned.floor), e.message());
    return false;
  }
  std::unique_ptr<IdGenerator> generator = std::move(created).value();
  // The time fence (docs/design.md, "Why two daemons never issue the same
  // ID", rule 1): never past the time our node says plus the lease.
  generator->set_fence_ms(owned.confirmed_ts + options_.settings.lease_timeout.count());
  // Before it can issue: a floor ahead of the clock makes it refuse with
  // floor_ahead (waiting for the floor is the cluster's, not this worker
  // ID's, so taking another would not help).
  // So does the cluster's fence (cluster_identity.hpp).
  if (cluster_floor_ms() != INT64_MIN) generator->raise_migration_floor(cluster_floor_ms());
  reservation_->attach(
      *generator, state::StateRecord{options_.strategy, options_.root, owned.worker_id, owned.node,
                                     owned.owner, layout_.settings(), 0, 0});
  worker_id_ = owned.worker_id;
  owned_floor_ = owned.floor;
  set_held(HeldWorker{owned.worker_id, owned.node, owned.owner.instance});
  generator_ = &slot_.install(std::move(generator));
  last_confirmed_sent_ = owned.sent;
  // Held for the grace: no lease (503 not_ready) until the heartbeat at its
  // end, which reads the fence again first.
  if (!held_for_grace) lease_.extend_until(owned.sent + options_.settings.lease_timeout);
  gauges_.last_heartbeat.store(owned.sent, std::memory_order_relaxed);
  gauges_.worker_acquisitions.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("worker ID {} acquired ({}, {}); floor {}", owned.worker_id, options_.strategy,
               owned.node, owned.floor > 0 ? format_iso8601_ms(owned.floor) : std::string("none"));
  if (held_for_grace) {
    spdlog::info(
        "worker ID {} issues in {} ms: claimed over a ZooKeeper connection younger than "
        "coordinator.restore_grace_ms, it waits for the cluster's fence to be read again",
        owned.worker_id,
        std::max<std::int64_t>(
            0, std::chrono::ceil<milliseconds>(grace_end_ - clock_.monotonic()).count()));
  }
  return true;
}

Coordinator::Step Coordinator::renew() {
  const auto sent = clock_.monotonic();
  const std::int64_t sent_wall = clock_.wall_ms();
  const std::int64_t ts = ts_to_write(sent, sent_wall);
  const std::int64_t zxid_before = history_->highest_zxid();
  auto written = strategy_->renew(*zk_, ts, generator_->high_water_mark_ms());
  const std::int64_t received_wall = clock_.wall_ms();
  if (!written) {
    const CoordErrc code = written.error().code;
    // Gone where no rule lets anyone take it while our lease runs: ZooKeeper
    // lost what it acknowledged, and whoever it gave our worker ID to may
    // issue beside us, as may we with another worker ID it gives us.
    if (code == CoordErrc::vanished && lease_runs()) {
      history_lost(HistoryLoss::rolled_back, fmt::format("our node is gone while our lease ran: {}",
                                                         written.error().message));
      return Step::lost;
    }
    if (code == CoordErrc::lost || code == CoordErrc::vanished) {
      lose(written.error().message);
      return Step::lost;
    }
    gauges_.heartbeat_failures.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("heartbeat failed: {}; retrying in {} ms (lease: {} ms left)",
                 written.error().message, backoff_.count(), lease_.status().remaining.count());
    return Step::retry;
  }
  // The migration floor, read after the write on the same session and
  // before the lease it grants is used: the write may have re-created our
  // alive node after `pool floor` found none and counted our lease as run
  // out; this read then sees that floor (migration_floor.hpp). Unread, the
  // lease is not extended: it runs out, which is always safe.
  const auto read_at = clock_.monotonic();
  if (!read_migration_floor()) {
    gauges_.heartbeat_failures.fetch_add(1, std::memory_order_relaxed);
    return Step::retry;
  }
  if (!history_follows(zxid_before, written.value().zxid, "heartbeat")) return Step::lost;
  gauges_.heartbeats.fetch_add(1, std::memory_order_relaxed);
  gauges_.last_heartbeat.store(sent, std::memory_order_relaxed);
  last_confirmed_sent_ = sent;
  // Answered over a connection younger than the grace: the lease running
  // (granted before) is kept, none is added; the heartbeat at the grace's end,
  // after reading the fence again, extends it (docs/design.md, "A restore,
  // and the grace").
  if (held_for_grace(read_at)) {
    next_heartbeat_ = std::max(grace_end_, clock_.monotonic());
    return Step::ok;
  }
  lease_.extend_until(sent + options_.settings.lease_timeout);
  next_heartbeat_ = sent + options_.settings.heartbeat_interval;
  saw_zookeeper_time(sent, written.value().mtime_ms);
  if (judge_clock_skew(sent_wall, received_wall, written.value().mtime_ms) == Skew::refuse_start) {
    fail(skew_description() + "; refusing to start. Fix the clock, then restart", false);
    return Step::fatal;
  }
  // A heartbeat written by a skewed clock moves no fence: the generator is
  // held meanwhile, and a fence (and the state file's reservation, which it
  // caps) that followed a clock stepped hours ahead would keep the next run
  // of this worker ID waiting for those hours. The time fence (rule 1 of
  // docs/design.md, "Why two daemons never issue the same ID") is the ts
  // written (ts_to_write may have held it back from the wall clock) + lease.
  if (!skew_held_) generator_->set_fence_ms(ts + options_.settings.lease_timeout.count());
  reap(written.value().mtime_ms);
  return Step::ok;
}

bool Coordinator::read_migration_floor() {
  auto node = zk_->get(options_.root, /*watch=*/true);
  const auto known = history_->known_id();
  const bool gone = !node && node.error().code == ZkErrc::no_node;
  if (!node || (known && recorded_cluster_id(node.value().data) != known)) {
    if (gone || node) {
      // Missing, or made again: check_root tells which, and fences.
      spdlog::warn("the cluster's root {} is {}; checking it again", options_.root,
                   gone ? "gone" : "another cluster's now");
      root_checked_ = false;
    } else {
      log_retry(fmt::format("cannot read the cluster's migration floor at {}: {}", options_.root,
                            node.error().message()));
    }
    std::lock_guard lock(mutex_);
    ++root_events_;  // read it again at the next step
    return false;
  }
  apply_fence(recorded_fence(node.value().data));
  vouch_ = recorded_vouch(node.value().data);
  read_form_policy(node.value().data);
  const auto floor = recorded_floor(node.value().data);
  if (!floor || floor->ms <= migration_floor_ms_) return true;
  migration_floor_ms_ = floor->ms;
  gauges_.migration_floor_ms.store(floor->ms, std::memory_order_relaxed);
  if (generator_) generator_->raise_migration_floor(floor->ms);
  spdlog::info("migration floor: no ID at or below {} (time unit of {}){}", floor->above_id,
               format_iso8601_ms(floor->ms), generator_ ? "; in force" : "");
  return true;
}

void Coordinator::read_form_policy(std::string_view root_data) {
  const auto recorded = recorded_form_policy(root_data);
  // None recorded: the root check records ours. Not a policy: every tag's
  // form in doubt (the root check refuses it at the next claim).
  const std::optional<FormPolicy> cluster =
      recorded ? std::optional(recorded.value().value_or(options_.forms)) : std::nullopt;
  if (recorded && recorded.value()) cluster_forms_ = *recorded.value();
  const bool disagreed = gauges_.forms.disagrees();
  gauges_.forms.record(cluster, options_.forms);
  if (gauges_.forms.disagrees() && !disagreed) {
    spdlog::error(
        "the cluster's form policy changed ({}); this daemon's forms section says ({}): tags "
        "whose form the two disagree on are refused (503 form_policy_changed) until it is "
        "restarted with the cluster's forms",
        cluster ? describe(*cluster) : recorded.error(), describe(options_.forms));
  } else if (disagreed && !gauges_.forms.disagrees()) {
    spdlog::info("the cluster's form policy is this daemon's again ({})", describe(options_.forms));
  }
}

void Coordinator::confirm_migration_floor() {
  const std::int64_t floor = cluster_floor_ms();
  if (!generator_ || floor == INT64_MIN) return;
  if (confirmed_session_ == zk_->session_id() && confirmed_floor_ms_ >= floor) return;
  if (auto confirmed = confirm_floor(*zk_, options_.root, floor, worker_id_); !confirmed) {
    log_retry(fmt::format("cannot confirm the migration floor: {}", confirmed.error().message));
    std::lock_guard lock(mutex_);
    ++root_events_;  // try again at the next step
    return;
  }
  confirmed_session_ = zk_->session_id();
  confirmed_floor_ms_ = floor;
}

void Coordinator::reap(std::optional<std::int64_t> zk_now_ms) {
  auto reaped = strategy_->reap(*zk_, zk_now_ms);
  if (!reaped) {
    spdlog::warn("reclaiming stale worker IDs failed: {}", reaped.error().message);
    return;
  }
  const ReapResult& r = reaped.value();
  gauges_.reaper.store(strategy_->reaper(), std::memory_order_relaxed);
  if (r.pool_size) {
    gauges_.pool_size.store(*r.pool_size, std::memory_order_relaxed);
    gauges_.pool_free.store(std::int64_t{*r.pool_size} - r.in_use, std::memory_order_relaxed);
  }
  if (r.moved > 0) {
    gauges_.workers_reclaimed.fetch_add(static_cast<std::uint64_t>(r.moved));
    spdlog::info("returned {} stale worker ID(s) to the pool", r.moved);
  }
  for (const std::uint32_t id : r.unreadable) {
    if (reported_unreadable_.insert(id).second) {
      spdlog::error(
          "worker ID {} is stale, but its inuse node cannot be read: its floor is "
          "unknown, so it stays out of the pool (see snowflaked pool status)",
          id);
    }
  }
}

void Coordinator::lose(const std::string& why) {
  // In this order: no request passes the lease check, none finds the
  // generator, none completes an ID already begun; then the state file
  // stops renewing (a write racing this cannot reopen a closed generator).
  lease_.revoke();
  slot_.clear();
  set_held(std::nullopt);
  generator_->close();
  reservation_->detach(false);
  strategy_->forget(zk_.get());
  gauges_.workers_lost.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("worker ID {} lost: {}; stopped issuing, acquiring another", worker_id_, why);
  generator_ = nullptr;
}

Coordinator::Step Coordinator::setback(const CoordError& e, std::string_view doing) {
  if (e.fatal()) {
    fail(e.message, e.permanent());
    return Step::fatal;
  }
  log_retry(doing.empty() ? e.message : fmt::format("{}: {}", doing, e.message));
  return Step::retry;
}

void Coordinator::fail(const std::string& why, bool permanent) {
  spdlog::critical("{}", why);
  if (on_fatal_) on_fatal_(why, permanent);
}

void Coordinator::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    shut_down_ = stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (generator_) {
    lease_.revoke();
    slot_.clear();
    set_held(std::nullopt);
    generator_->close();
    reservation_->detach(true);
    // The floor for the next owner: above all we issued and all earlier
    // owners may have.
    const std::int64_t floor = std::max(generator_->high_water_mark_ms(), owned_floor_);
    if (zk_ && !zk_->gone()) {
      if (auto back = strategy_->give_back(*zk_, floor); back) {
        spdlog::info("worker ID {} given back with floor {}", worker_id_, format_iso8601_ms(floor));
        reservation_->forget_owner();  // nothing to take over next time
      } else {
        spdlog::warn(
            "could not give worker ID {} back: {} (it is reclaimed after reclaim_after, "
            "or taken over by our next run)",
            worker_id_, back.error().message);
      }
    }
    generator_ = nullptr;
  }
  if (reservation_) reservation_->stop();
  set_session(nullptr);
  gauges_.zookeeper.store(ZkConnection::connecting);
  gauges_.reaper.store(false, std::memory_order_relaxed);
}

}  // namespace snowflake::coord
