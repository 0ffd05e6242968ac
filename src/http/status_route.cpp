#include "status_route.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>

#include "sequence_routes.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/version.hpp"

namespace snowflake::http {

namespace {

// The cluster's migration floor: none, or when IDs may resume above it.
nlohmann::ordered_json floor_json(std::int64_t floor_ms) {
  if (floor_ms == INT64_MIN) return nullptr;
  return {{"ms", floor_ms}, {"time", format_iso8601_ms(floor_ms)}};
}

// The cluster's identity, fence and history (cluster/cluster_identity.hpp):
// null in static mode, which has no cluster, unless it serves sequences:
// they live in ZooKeeper, and the losses of its history reach them.
nlohmann::ordered_json cluster_json(const RouterContext& ctx) {
  if (!ctx.info.timings && !ctx.sequences) return nullptr;
  const auto& co = ctx.coordination;
  // The fence's end first (Coordinator::apply_fence stores it last).
  const std::int64_t until = co.fence_until_ms.load(std::memory_order_acquire);
  const ClusterWords words = co.cluster.get();
  nlohmann::ordered_json fence = nullptr;
  if (until != INT64_MIN) {
    fence = {{"until", format_iso8601_ms(until)},
             {"until_ms", until},
             {"kind", co.fence_kind.load(std::memory_order_relaxed) == FenceGauge::new_cluster
                          ? "new_cluster"
                          : "history_lost"},
             {"in_force", until >= SystemClock::instance().wall_ms()},
             {"at", format_iso8601_ms(words.fence_at_ms)},
             {"reason", words.fence_reason}};
  }
  nlohmann::ordered_json last_loss = nullptr;
  if (!words.loss_kind.empty()) {
    last_loss = {{"kind", words.loss_kind},
                 {"detail", words.loss_detail},
                 {"detected", format_iso8601_ms(words.loss_ms)}};
  }
  // The cluster's form policy while it differs from this daemon's forms.
  nlohmann::ordered_json forms = nullptr;
  if (co.forms.disagrees()) {
    const auto cluster = co.forms.disagreeing();
    forms = cluster ? describe(*cluster) : "the root's forms record is not a policy";
  }
  return {{"id", words.cluster_id.empty() ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json(words.cluster_id)},
          {"fence", fence},
          {"history_losses", co.history_losses.load(std::memory_order_relaxed)},
          {"last_loss", last_loss},
          {"form_policy_differs", forms}};
}

// The worker-ID leases this daemon grants: their bounds, and the named
// pools as its reaping passes saw them.
nlohmann::ordered_json leases_json(const RouterContext& ctx) {
  if (!ctx.leases) return nullptr;
  auto pools = nlohmann::ordered_json::array();
  for (const auto& p : ctx.metrics.lease_pools_seen()) {
    pools.push_back({{"name", p.name}, {"size", p.size}, {"in_use", p.in_use}});
  }
  return {{"min_duration_ms", ctx.lease_limits.min_duration.count()},
          {"max_duration_ms", ctx.lease_limits.max_duration.count()},
          {"pools", std::move(pools)}};
}

}  // namespace

Response status(RouterContext& ctx) {
  const auto& layout = ctx.layout;
  const auto& s = layout.settings();
  const IdGenerator* generator = ctx.worker.current();
  const auto& co = ctx.coordination;
  const auto relaxed = std::memory_order_relaxed;
  const auto lease = ctx.lease.status();
  const auto uptime = BootClock::now() - ctx.info.started;
  nlohmann::ordered_json body{
      {"service", ctx.info.service},
      {"version", kVersion},
      {"mode", to_string(ctx.info.mode)},
      {"datacenter_id", ctx.info.datacenter_id},
      {"worker_id", generator ? nlohmann::json(generator->worker_id()) : nlohmann::json(nullptr)},
      {"lease",
       {{"state", to_string(lease.state)},
        {"remaining_ms", lease.remaining.count() < 0 ? nlohmann::json(nullptr)
                                                     : nlohmann::json(lease.remaining.count())}}},
      {"layout",
       {{"time_bits", s.time_bits},
        {"datacenter_bits", s.datacenter_bits},
        {"worker_bits", s.worker_bits},
        {"sequence_bits", s.sequence_bits},
        {"order", to_string(s.order)},
        {"time_unit_ms", s.time_unit_ms},
        {"epoch", format_iso8601_ms(s.epoch_ms)},
        {"end_of_life", format_iso8601_ms(layout.end_of_life_ms())}}},
      {"coordination",
       {{"zookeeper", to_string(co.zookeeper.load(relaxed))},
        {"pool_exhausted", co.pool_exhausted.load(relaxed)},
        {"heartbeats", co.heartbeats.load(relaxed)},
        {"heartbeat_failures", co.heartbeat_failures.load(relaxed)},
        {"clock_skew_ms", co.clock_skew_ms.load(relaxed)}}},
      {"floor", floor_json(co.migration_floor_ms.load(relaxed))},
      {"cluster", cluster_json(ctx)},
      {"high_water_mark_ms",
       generator ? nlohmann::json(generator->high_water_mark_ms()) : nlohmann::json(nullptr)},
      {"sequences", sequences_json(ctx)},
      {"leases", leases_json(ctx)},
      {"uptime_s", std::chrono::duration_cast<std::chrono::seconds>(uptime).count()},
      {"io_threads", ctx.info.io_threads}};
  return json_response(Status::ok, body.dump());
}

}  // namespace snowflake::http
