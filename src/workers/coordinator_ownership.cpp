// The Coordinator's worker ID (coordinator.hpp): acquired from the strategy,
// installed in the slot with its time fence, renewed by each heartbeat,
// judged against ZooKeeper's clock, given back or lost; and the reaper's turn
// after a heartbeat. The loop and the session are in coordinator.cpp; the
// cluster's root, fences and losses, in coordinator_cluster.cpp.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "snowflake/base/time_format.hpp"
#include "snowflake/workers/coordinator.hpp"
#include "worker_strategy.hpp"

namespace snowflake::coord {

namespace {
using std::chrono::milliseconds;
}  // namespace

bool Coordinator::lease_runs() const {
  return last_confirmed_sent_ != BootClock::time_point{} &&
         clock_.monotonic() < last_confirmed_sent_ + options_.settings.lease_timeout;
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
  // At once, not at the first heartbeat (minutes away by default): this
  // stands us in the reaper's line, and the role's holder leaves its watch
  // on alive/, by which it returns the IDs that stopping daemons mark
  // (RecyclePool::release) within seconds. (Only the pool has the role.)
  if (!reapers_dir_.empty()) (void)reap(owned.fresh_mtime_ms);
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
  gauges_.heartbeat_retries.fetch_add(written.value().retried, std::memory_order_relaxed);
  if (written.value().retried > gauges_.heartbeat_retries_most.load(std::memory_order_relaxed)) {
    gauges_.heartbeat_retries_most.store(written.value().retried, std::memory_order_relaxed);
  }
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

bool Coordinator::reap(std::optional<std::int64_t> zk_now_ms) {
  auto reaped = strategy_->reap(*zk_, zk_now_ms);
  if (!reaped) {
    spdlog::warn("reclaiming stale worker IDs failed: {}", reaped.error().message);
    return false;
  }
  const ReapResult& r = reaped.value();
  gauges_.reaper.store(strategy_->reaper(), std::memory_order_relaxed);
  if (r.pool_size) {
    gauges_.pool_size.store(*r.pool_size, std::memory_order_relaxed);
    gauges_.pool_free.store(std::int64_t{*r.pool_size} - r.in_use, std::memory_order_relaxed);
  }
  if (r.moved > 0) {
    gauges_.workers_reclaimed.fetch_add(static_cast<std::uint64_t>(r.moved));
    spdlog::info("returned {} stale or released worker ID(s) to the pool", r.moved);
  }
  for (const std::uint32_t id : r.unreadable) {
    if (reported_unreadable_.insert(id).second) {
      spdlog::error(
          "worker ID {} is stale, but its inuse node cannot be read: its floor is "
          "unknown, so it stays out of the pool (see snowflaked pool status)",
          id);
    }
  }
  return !r.incomplete;
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

}  // namespace snowflake::coord
