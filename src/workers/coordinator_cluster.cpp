// The Coordinator's view of the cluster (coordinator.hpp): the root checked
// (its identity, a fence, a history ZooKeeper lost), losses acted on and
// settled, the restore grace, and what each heartbeat reads of the root (the
// migration floor, the fence, the vouch, the form policy). The loop and the
// session are in coordinator.cpp; the worker ID held, in
// coordinator_ownership.cpp.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/state/cluster_file.hpp"
#include "snowflake/workers/coordinator.hpp"
#include "worker_strategy.hpp"

namespace snowflake::coord {

namespace {

FenceGauge gauge_of(const std::optional<ClusterFence>& fence) {
  if (!fence) return FenceGauge::none;
  return fence->kind == FenceKind::new_cluster ? FenceGauge::new_cluster : FenceGauge::history_lost;
}

}  // namespace

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
  // Readers (/status, the 503) load the fence's end first: a fence put up
  // shows its end only once its kind and reason are there, and one lifted
  // loses its end before them.
  const auto describe = [&] {
    gauges_.fence_kind.store(gauge_of(fence), std::memory_order_relaxed);
    gauges_.cluster.update([&](ClusterWords& w) {
      w.fence_reason = fence ? fence->reason : std::string();
      w.fence_at_ms = fence ? fence->at_ms : 0;
    });
  };
  if (fence) describe();
  gauges_.fence_until_ms.store(fence ? fence->until_ms : INT64_MIN, std::memory_order_release);
  if (!fence) describe();
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

}  // namespace snowflake::coord
