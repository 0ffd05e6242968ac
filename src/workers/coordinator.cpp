// The Coordinator's loop (coordinator.hpp): start-up, the ZooKeeper session
// connected and adopted, what each tick does, backoff, shutdown. The worker
// ID held is in coordinator_ownership.cpp; the cluster's root, fences and
// losses, in coordinator_cluster.cpp.

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
#include "snowflake/state/cluster_file.hpp"

namespace snowflake::coord {

namespace {

using std::chrono::milliseconds;
constexpr milliseconds kMinBackoff{100};
constexpr milliseconds kMaxBackoff{5'000};
// How long the reaper gathers stopped daemons' marks after an alive node
// goes before its pass: a fleet stopping at once comes back in a few passes
// (each a bump of the move count per 512 IDs), not one per stop.
constexpr milliseconds kReleaseGather{1'000};

std::string host_of(const std::string& advertise) {
  return advertise.substr(0, advertise.rfind(':'));
}

std::uint32_t port_of(const std::string& advertise) {
  return static_cast<std::uint32_t>(std::stoul(advertise.substr(advertise.rfind(':') + 1)));
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
  alive_dir_ = strategy_->alive_dir();
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
    RecycleSettings settings{
        options_.root,
        layout_.max_worker_id(),
        s.lease_timeout,
        s.reclaim_after,
        options_.zookeeper.connect_timeout,
        2 * options_.zookeeper.session_timeout + options_.zookeeper.connect_timeout,
        2 * options_.zookeeper.session_timeout + options_.zookeeper.connect_timeout};
    settings.safety_margin = s.safety_margin;
    settings.max_skew = s.max_skew;
    return std::make_unique<RecycleStrategy>(std::move(settings), token_, std::move(predecessor));
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
           reaper_events_ != reaper_events_seen_ || claim_events_ != claim_events_seen_ ||
           alive_events_ != alive_events_seen_;
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
  bool alive_changed = false;
  {
    std::lock_guard lock(mutex_);
    root_changed = root_events_ != root_events_seen_;
    root_events_seen_ = root_events_;
    reaper_changed = reaper_events_ != reaper_events_seen_;
    reaper_events_seen_ = reaper_events_;
    if (claim_events_ != claim_events_seen_) strategy_->claim_watch_fired();
    claim_events_seen_ = claim_events_;
    alive_changed = alive_events_ != alive_events_seen_;
    alive_events_seen_ = alive_events_;
  }
  if (alive_changed && !release_pass_due_) release_pass_due_ = clock_.monotonic() + kReleaseGather;
  if (root_changed && !read_migration_floor()) return Step::retry;
  confirm_migration_floor();
  if (reaper_changed) {
    // The candidate below ours ended: the role may be ours now, and a stale
    // node may have waited for it since its holder died.
    strategy_->reaper_watch_fired();
    (void)reap(std::nullopt);
  }
  if (release_pass_due_ && clock_.monotonic() >= *release_pass_due_) {
    // The watch is left again by this pass's listing. A pass that failed or
    // left marks behind is tried again a moment later: nothing else would
    // come for them before the next heartbeat's pass (minutes by default).
    release_pass_due_.reset();
    if (!reap(std::nullopt)) release_pass_due_ = clock_.monotonic() + kReleaseGather;
  }
  if (!generator_) return acquire();
  const auto now = clock_.monotonic();
  if (now < next_heartbeat_) {
    const auto until =
        release_pass_due_ ? std::min(next_heartbeat_, *release_pass_due_) : next_heartbeat_;
    idle_for(std::chrono::duration_cast<milliseconds>(until - now) + milliseconds(1));
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
    const bool alive = !alive_dir_.empty() && path == alive_dir_;
    if (!root && !reaper && !claimer && !alive) return;
    {
      std::lock_guard lock(mutex_);
      ++(root ? root_events_ : reaper ? reaper_events_ : claimer ? claim_events_ : alive_events_);
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

void Coordinator::log_retry(const std::string& why) {
  if (why == last_retry_) {
    spdlog::debug("{}; retrying", why);
    return;
  }
  spdlog::warn("{}; retrying", why);
  last_retry_ = why;
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
