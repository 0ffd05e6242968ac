#include "snowflake/coord/coordinator.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "snowflake/coord/cluster_layout.hpp"
#include "snowflake/time_format.hpp"

namespace snowflake::coord {

namespace {

using std::chrono::milliseconds;
constexpr milliseconds kMinBackoff{100};
constexpr milliseconds kMaxBackoff{5'000};
// The state file reserves this many persist intervals ahead of the clock, so
// that slow writes (an fsync stuck behind a busy disk, a starved thread) do
// not stop issuing. The cost: an immediate restart after kill -9 waits out
// up to this much.
constexpr int kReserveIntervals = 10;

std::string host_of(const std::string& advertise) { return advertise.substr(0, advertise.rfind(':')); }

std::uint32_t port_of(const std::string& advertise) {
  return static_cast<std::uint32_t>(std::stoul(advertise.substr(advertise.rfind(':') + 1)));
}

}  // namespace

struct Coordinator::Owned {
  std::uint32_t worker_id = 0;
  std::optional<PoolClaim> pool{};
  std::optional<SequentialClaim> sequential{};
  bool verified = true;  // false: started from the state file, ZooKeeper not yet asked
};

Coordinator::Coordinator(CoordinatorOptions options, const IdLayout& layout, WorkerSlot& slot,
                         Lease& lease, CoordinationGauges& gauges, FatalHandler on_fatal)
    : options_(std::move(options)),
      layout_(layout),
      slot_(slot),
      lease_(lease),
      gauges_(gauges),
      on_fatal_(std::move(on_fatal)),
      state_file_(options_.state_dir),
      token_(OwnerToken::fresh(host_of(options_.advertise), port_of(options_.advertise))) {
  if (options_.strategy == "recycle") {
    pool_.emplace(options_.root, layout_.max_worker_id());
  } else {
    sequential_.emplace(options_.root, options_.advertise, layout_.max_worker_id());
  }
}

Coordinator::~Coordinator() { shutdown(); }

Result<void, std::string> Coordinator::start() {
  if (::access(options_.state_dir.c_str(), W_OK) != 0) {
    return fmt::format("coordinator.state_dir \"{}\" is not a writable directory: {}",
                       options_.state_dir, std::strerror(errno));
  }
  auto loaded = state_file_.load();
  if (!loaded) return loaded.error();
  if (const auto& r = loaded.value(); r && r->strategy == options_.strategy && r->root == options_.root) {
    previous_ = *r;
  }
  gauges_.zookeeper.store(ZkConnection::connecting);
  thread_running_.store(true, std::memory_order_release);
  heartbeat_thread_ = std::thread([this] { run(); });
  persist_thread_ = std::thread([this] { persist_loop(); });
  return outcome::success();
}

bool Coordinator::wait_for(milliseconds d) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

bool Coordinator::idle_for(milliseconds d) {
  mark_step(false);
  const bool go_on = wait_for(d);
  mark_step(true);
  return go_on;
}

void Coordinator::mark_step(bool busy) noexcept {
  step_started_ns_.store(busy ? clock_.monotonic().time_since_epoch().count() : 0,
                         std::memory_order_relaxed);
}

bool Coordinator::heartbeat_thread_healthy(milliseconds limit) const {
  if (!thread_running_.load(std::memory_order_acquire)) return false;
  const std::int64_t started = step_started_ns_.load(std::memory_order_relaxed);
  if (started == 0) return true;  // waiting for its next step
  const std::int64_t now = clock_.monotonic().time_since_epoch().count();
  return std::chrono::nanoseconds(now - started) <= limit;
}

void Coordinator::run() {
  mark_step(true);
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
      case Step::fatal: return;
      case Step::retry:
        if (!idle_for(backoff_)) return;
        backoff_ = std::min(backoff_ * 2, max_backoff);
        break;
      case Step::ok: backoff_ = kMinBackoff; break;
      case Step::idle:
      case Step::lost: break;
    }
  }
}

Coordinator::Step Coordinator::tick() {
  if (!zk_ || zk_->gone()) return connect();
  if (!layout_checked_) {
    auto checked = check_cluster_layout(*zk_, options_.root, layout_.settings());
    if (!checked) return setback(checked.error(), "cannot check the cluster's layout");
    layout_checked_ = true;
  }
  if (!owned_ || !owned_->verified) return pool_ ? acquire_recycle() : acquire_sequential();
  const auto now = clock_.monotonic();
  if (now < next_heartbeat_) {
    idle_for(std::chrono::duration_cast<milliseconds>(next_heartbeat_ - now) + milliseconds(1));
    return Step::idle;
  }
  return heartbeat();
}

Coordinator::Step Coordinator::connect() {
  if (zk_) {
    spdlog::warn("ZooKeeper session expired; opening a new one (ownership of worker ID {} is "
                 "checked by the next heartbeat)",
                 owned_ ? std::to_string(owned_->worker_id) : std::string("none"));
    zk_.reset();
  }
  auto session = ZkSession::connect(options_.zookeeper);
  if (!session) {
    spdlog::warn("cannot reach ZooKeeper at {}: {}; retrying", options_.zookeeper.hosts,
                 session.error().message());
    if (booting_ && !owned_ && sequential_) start_from_cache();
    return Step::retry;
  }
  zk_ = std::move(session).value();
  gauges_.sessions.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("ZooKeeper session 0x{:x} established with {} (timeout {} ms)", zk_->client_id().first,
               options_.zookeeper.hosts, zk_->negotiated_timeout().count());
  if (owned_) next_heartbeat_ = clock_.monotonic();  // re-verify ownership at once
  return Step::ok;
}

std::int64_t Coordinator::local_floor(std::uint32_t worker_id) const {
  std::int64_t floor = 0;
  if (previous_ && previous_->worker_id == worker_id) floor = previous_->reserved_until;
  std::lock_guard lock(save_mutex_);
  if (record_.worker_id == worker_id && !record_.node.empty()) floor = std::max(floor, reserved_until_);
  return floor;
}

void Coordinator::hold_if_skewed(bool over) {
  if (over == skew_held_) return;
  if (over) {
    spdlog::error("{}; not issuing IDs until it is back within", skew_description());
  } else {
    spdlog::info("the wall clock agrees with ZooKeeper's again ({} ms); issuing IDs",
                 gauges_.clock_skew_ms.load());
  }
  skew_held_ = over;
  lease_.hold_for_clock_skew(over);
}

std::string Coordinator::skew_description() const {
  return fmt::format("the wall clock is {} ms off ZooKeeper's (more than coordinator.max_skew_ms {})",
                     gauges_.clock_skew_ms.load(), options_.settings.max_skew.count());
}

bool Coordinator::skewed(std::int64_t sent_wall_ms, std::int64_t received_wall_ms,
                         std::int64_t zk_mtime_ms) {
  // The server stamped its time somewhere between our two readings.
  const std::int64_t skew = (sent_wall_ms + received_wall_ms) / 2 - zk_mtime_ms;
  const std::int64_t uncertainty = (received_wall_ms - sent_wall_ms + 1) / 2;
  gauges_.clock_skew_ms.store(skew, std::memory_order_relaxed);
  return std::abs(skew) - uncertainty > options_.settings.max_skew.count();
}

Coordinator::Step Coordinator::install(std::uint32_t worker_id, std::string node,
                                       std::optional<OwnerToken> owner, std::int64_t floor) {
  GeneratorOptions g = options_.generator;
  if (floor > 0) g.floor_ms = floor;
  g.max_floor_wait = options_.settings.max_boot_wait;
  auto created = IdGenerator::create(layout_, worker_id, g);
  if (!created) {
    const GenerateError& e = created.error();
    if (e.code == GenerateErrc::clock_behind_floor) {
      fail(fmt::format("the wall clock is {} ms behind the floor of worker ID {} ({}, the last "
                       "time it may have been used), more than coordinator.max_boot_wait_ms "
                       "({}); refusing to issue IDs. Fix the clock, then restart",
                       e.gap.count(), worker_id, format_iso8601_ms(floor),
                       options_.settings.max_boot_wait.count()));
    } else {
      fail(fmt::format("cannot issue IDs as worker {}: {}", worker_id, e.message()));
    }
    return Step::fatal;
  }
  std::unique_ptr<IdGenerator> generator = std::move(created).value();
  // Nothing may be issued until the state file has reserved it.
  generator->set_time_ceiling_ms(floor);
  IdGenerator* raw = generator.get();
  {
    std::lock_guard save(save_mutex_);
    std::lock_guard lock(mutex_);
    generator_ = raw;
    record_ = {options_.strategy, options_.root, worker_id, node, std::move(owner),
               layout_.settings(), raw->high_water_mark_ms(), 0};
  }
  persist(false);
  slot_.install(std::move(generator));
  owned_ = std::make_unique<Owned>();
  owned_->worker_id = worker_id;
  booting_ = false;
  gauges_.worker_acquisitions.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("worker ID {} acquired ({}, {}); floor {}", worker_id, options_.strategy, node,
               floor > 0 ? format_iso8601_ms(floor) : std::string("none"));
  return Step::ok;
}

bool Coordinator::start_from_cache() {
  if (!previous_ || previous_->layout != layout_.settings() ||
      !previous_->node.starts_with(options_.root + "/forever/" + options_.advertise + "-")) {
    return false;
  }
  spdlog::warn("ZooKeeper is unreachable: starting as worker ID {} from {} (floor {}); the node "
               "is verified once ZooKeeper answers",
               previous_->worker_id, state_file_.path(), format_iso8601_ms(previous_->reserved_until));
  if (install(previous_->worker_id, previous_->node, std::nullopt, previous_->reserved_until) != Step::ok) {
    return false;
  }
  owned_->verified = false;
  lease_.grant_indefinitely();
  return true;
}

Coordinator::Step Coordinator::acquire_sequential() {
  const std::int64_t sent_wall = clock_.wall_ms();
  auto claim = sequential_->acquire(*zk_, sent_wall);
  const std::int64_t received_wall = clock_.wall_ms();
  if (!claim) return setback(claim.error(), "cannot acquire a sequential worker ID");
  SequentialClaim& c = claim.value();
  const bool at_boot = booting_ || (owned_ && !owned_->verified);
  const bool over = skewed(sent_wall, received_wall, c.mtime_ms);
  if (over && at_boot) {
    fail(skew_description() + "; refusing to start. Fix the clock, then restart");
    return Step::fatal;
  }
  hold_if_skewed(over);
  if (owned_ && !owned_->verified) {
    if (owned_->worker_id == c.worker_id) {
      owned_->verified = true;
      owned_->sequential = c;
      next_heartbeat_ = clock_.monotonic() + options_.settings.heartbeat_interval;
      spdlog::info("ZooKeeper confirms worker ID {} ({})", c.worker_id, c.path);
      return Step::ok;
    }
    lose(fmt::format("the state file's worker ID {} is not ZooKeeper's ({})", owned_->worker_id,
                     c.path));
  }
  const Step step = install(c.worker_id, c.path, std::nullopt,
                            std::max(c.floor, local_floor(c.worker_id)));
  if (step != Step::ok) return step;
  owned_->sequential = c;
  // Sequential numbers are never given to anyone else: no lease to expire.
  lease_.grant_indefinitely();
  next_heartbeat_ = clock_.monotonic() + options_.settings.heartbeat_interval;
  return Step::ok;
}

Coordinator::Step Coordinator::acquire_recycle() {
  if (!pool_ready_) {
    auto ready = pool_->ensure(*zk_, options_.zookeeper.connect_timeout);
    if (!ready) {
      spdlog::warn("cannot prepare the worker-ID pool: {}; retrying", ready.error().message);
      return Step::retry;
    }
    pool_ready_ = true;
  }
  const auto sent = clock_.monotonic();
  const std::int64_t sent_wall = clock_.wall_ms();
  const InuseData data{token_, 0, sent_wall, 0, options_.settings.lease_timeout.count()};
  std::optional<PoolClaim> claim;
  if (previous_ && previous_->owner && !tried_takeover_) {
    // Our previous run crashed holding this worker ID: take it back instead
    // of claiming another, so a crash loop cannot drain the pool.
    InuseData mine = data;
    mine.floor = previous_->reserved_until;
    auto taken = pool_->take_over(*zk_, previous_->worker_id, *previous_->owner, mine);
    if (taken) {
      spdlog::info("took over worker ID {} from our previous run (pid {})", previous_->worker_id,
                   previous_->owner->pid);
      claim = std::move(taken).value();
    } else if (taken.error().code != CoordErrc::lost) {
      spdlog::warn("cannot take back worker ID {}: {}; retrying", previous_->worker_id,
                   taken.error().message);
      return Step::retry;
    }
    tried_takeover_ = true;
  }
  if (!claim) {
    auto claimed = pool_->claim(*zk_, data);
    if (!claimed) {
      const CoordError& e = claimed.error();
      if (e.code == CoordErrc::pool_exhausted) {
        gauges_.pool_exhausted.store(true);
        spdlog::error("worker-ID pool exhausted: {}; not ready, retrying (reclaim_after {} ms "
                      "frees the IDs of dead daemons)",
                      e.message, options_.settings.reclaim_after.count());
      } else {
        spdlog::warn("cannot claim a worker ID: {}; retrying", e.message);
      }
      return Step::retry;
    }
    claim = std::move(claimed).value();
  }
  gauges_.pool_exhausted.store(false);
  const std::int64_t received_wall = clock_.wall_ms();
  PoolClaim& c = *claim;
  const std::int64_t floor = std::max(c.data.floor, local_floor(c.worker_id));
  const auto give_back = [&] {
    if (auto released = pool_->release(*zk_, c, floor); !released) {
      spdlog::warn("could not return worker ID {}: {}", c.worker_id, released.error().message);
    }
  };
  const bool over = skewed(sent_wall, received_wall, c.mtime_ms);
  if (over && booting_) {
    give_back();
    fail(skew_description() + "; refusing to start. Fix the clock, then restart");
    return Step::fatal;
  }
  hold_if_skewed(over);  // later (a new worker ID after a loss): held, not fatal
  const Step step = install(c.worker_id, c.path, c.data.owner, floor);
  if (step != Step::ok) {
    give_back();
    return step;
  }
  owned_->pool = c;
  lease_.extend_until(sent + options_.settings.lease_timeout);
  next_heartbeat_ = sent + options_.settings.heartbeat_interval;
  return Step::ok;
}

Coordinator::Step Coordinator::heartbeat() {
  const auto sent = clock_.monotonic();
  const std::int64_t sent_wall = clock_.wall_ms();
  const std::int64_t hwm = generator_->high_water_mark_ms();
  Result<void, CoordError> written = outcome::success();
  std::int64_t mtime = 0;
  if (owned_->pool) {
    written = pool_->heartbeat(*zk_, *owned_->pool, sent_wall, hwm);
    mtime = owned_->pool->mtime_ms;
  } else {
    auto stat = sequential_->heartbeat(*zk_, *owned_->sequential, sent_wall, hwm);
    if (stat) mtime = stat.value().mtime_ms;
    else written = stat.error();
  }
  const std::int64_t received_wall = clock_.wall_ms();
  if (!written) {
    if (written.error().code == CoordErrc::lost) {
      lose(written.error().message);
      return Step::lost;
    }
    gauges_.heartbeat_failures.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("heartbeat failed: {}; retrying in {} ms (lease: {} ms left)", written.error().message,
                 backoff_.count(), lease_.status().remaining.count());
    return Step::retry;
  }
  gauges_.heartbeats.fetch_add(1, std::memory_order_relaxed);
  if (owned_->pool) lease_.extend_until(sent + options_.settings.lease_timeout);
  next_heartbeat_ = sent + options_.settings.heartbeat_interval;

  hold_if_skewed(skewed(sent_wall, received_wall, mtime));

  if (owned_->pool) {
    auto reclaimed = pool_->reclaim_stale(*zk_, mtime, options_.settings.reclaim_after, owned_->worker_id);
    if (!reclaimed) {
      spdlog::warn("reclaiming stale worker IDs failed: {}", reclaimed.error().message);
    } else if (reclaimed.value() > 0) {
      gauges_.workers_reclaimed.fetch_add(static_cast<std::uint64_t>(reclaimed.value()));
      spdlog::info("returned {} stale worker ID(s) to the pool", reclaimed.value());
    }
  }
  return Step::ok;
}

void Coordinator::lose(const std::string& why) {
  lease_.revoke();
  slot_.clear();
  gauges_.workers_lost.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("worker ID {} lost: {}; stopped issuing, acquiring another", owned_->worker_id, why);
  generator_->close();
  {
    std::lock_guard save(save_mutex_);
    std::lock_guard lock(mutex_);
    generator_ = nullptr;
  }
  owned_.reset();
}

Coordinator::Step Coordinator::setback(const CoordError& e, std::string_view doing) {
  if (e.fatal()) {
    fail(e.message);
    return Step::fatal;
  }
  spdlog::warn("{}: {}; retrying", doing, e.message);
  return Step::retry;
}

void Coordinator::fail(const std::string& why) {
  spdlog::critical("{}", why);
  if (on_fatal_) on_fatal_(why);
}

void Coordinator::persist(bool final_write) {
  std::lock_guard save(save_mutex_);
  IdGenerator* generator = nullptr;
  {
    std::lock_guard lock(mutex_);
    generator = generator_;
  }
  if (!generator) return;
  StateRecord r = record_;
  r.hwm = generator->high_water_mark_ms();
  // Never lower the reservation while issuing: it is the next run's floor.
  // The final write, after the generator is closed, can say exactly.
  r.reserved_until =
      final_write ? r.hwm
                  : std::max(reserved_until_,
                             clock_.wall_ms() + kReserveIntervals * options_.settings.persist_interval.count());
  if (auto saved = state_file_.save(r); !saved) {
    static std::atomic<int> failures{0};
    if (failures.fetch_add(1) % 100 == 0) {
      spdlog::error("cannot write the state file: {}; IDs stop once its reservation runs out",
                    saved.error());
    }
    return;
  }
  record_ = r;
  reserved_until_ = r.reserved_until;
  if (!final_write) generator->set_time_ceiling_ms(r.reserved_until);
}

void Coordinator::persist_loop() {
  while (wait_for(options_.settings.persist_interval)) persist(false);
}

void Coordinator::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    shut_down_ = stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (persist_thread_.joinable()) persist_thread_.join();
  if (owned_) {
    lease_.revoke();
    slot_.clear();
    generator_->close();
    persist(true);
    // The floor for the next owner: above all we issued and all earlier
    // owners may have.
    std::int64_t hwm = generator_->high_water_mark_ms();
    if (owned_->pool) hwm = std::max(hwm, owned_->pool->data.floor);
    if (zk_ && !zk_->gone()) {
      if (owned_->pool) {
        if (auto released = pool_->release(*zk_, *owned_->pool, hwm); released) {
          spdlog::info("worker ID {} returned to the pool with floor {}", owned_->worker_id,
                       format_iso8601_ms(hwm));
          std::lock_guard save(save_mutex_);
          record_.owner.reset();  // nothing to take over next time
          (void)state_file_.save(record_);
        } else {
          spdlog::warn("could not return worker ID {} to the pool: {} (it is reclaimed after "
                       "reclaim_after)",
                       owned_->worker_id, released.error().message);
        }
      } else if (owned_->sequential) {
        (void)sequential_->heartbeat(*zk_, *owned_->sequential, clock_.wall_ms(), hwm);
      }
    }
  }
  zk_.reset();
  gauges_.zookeeper.store(ZkConnection::connecting);
}

}  // namespace snowflake::coord
