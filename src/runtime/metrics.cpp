#include "snowflake/runtime/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "metrics_lines.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/sequences/periodic.hpp"
#include "snowflake/sequences/sizing.hpp"

namespace snowflake {

std::string_view to_string(Route route) noexcept {
  switch (route) {
    case Route::id:
      return "id";
    case Route::seq:
      return "seq";
    case Route::decode:
      return "decode";
    case Route::health:
      return "health";
    case Route::ready:
      return "ready";
    case Route::status:
      return "status";
    case Route::metrics:
      return "metrics";
    case Route::openapi:
      return "openapi";
    case Route::leaf_id:
      return "leaf_id";
    case Route::leaf_decode:
      return "leaf_decode";
    case Route::leaf_segment:
      return "leaf_segment";
    case Route::leases:
      return "leases";
    case Route::other:
      return "other";
  }
  return "other";
}

Metrics::Metrics(std::size_t max_tags) : max_tags_(max_tags) {}

std::size_t Metrics::status_index(unsigned status) noexcept {
  const auto* it = std::find(kStatuses.begin(), kStatuses.end() - 1, status);
  return static_cast<std::size_t>(it - kStatuses.begin());  // the last slot is "other"
}

void Metrics::count_request(Route route, unsigned status) noexcept {
  requests_[static_cast<std::size_t>(route)][status_index(status)].fetch_add(
      1, std::memory_order_relaxed);
}

void Metrics::count_ids(std::string_view tag, std::uint64_t n, IdForm form) {
  ids_total_.fetch_add(n, std::memory_order_relaxed);
  ids_by_form_[static_cast<std::size_t>(form)].fetch_add(n, std::memory_order_relaxed);
  {
    std::shared_lock lock(tags_mutex_);
    if (const auto it = tags_.find(tag); it != tags_.end()) {
      it->second->fetch_add(n, std::memory_order_relaxed);
      return;
    }
  }
  std::unique_lock lock(tags_mutex_);
  auto it = tags_.find(tag);
  if (it == tags_.end()) {
    if (tags_.size() >= max_tags_) {
      ids_untracked_tags_.fetch_add(n, std::memory_order_relaxed);
      return;
    }
    it = tags_.emplace(std::string(tag), std::make_unique<std::atomic<std::uint64_t>>(0)).first;
  }
  it->second->fetch_add(n, std::memory_order_relaxed);
}

void Metrics::count_refusal(Route route, std::string_view code) noexcept {
  const auto* it = std::find(kRefusalCodes.begin(), kRefusalCodes.end() - 1, code);
  refusals_[static_cast<std::size_t>(route)][static_cast<std::size_t>(it - kRefusalCodes.begin())]
      .fetch_add(1, std::memory_order_relaxed);
}

void Metrics::observe_duration(Route route, std::chrono::nanoseconds took) noexcept {
  const double seconds = std::chrono::duration<double>(took).count();
  const auto* bucket = std::lower_bound(kDurationBuckets.begin(), kDurationBuckets.end(), seconds);
  const auto r = static_cast<std::size_t>(route);
  durations_[r][static_cast<std::size_t>(bucket - kDurationBuckets.begin())].fetch_add(
      1, std::memory_order_relaxed);
  duration_sum_ns_[r].fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, took.count())),
                                std::memory_order_relaxed);
}

namespace {

void render_cluster_fence(const CoordinationGauges& c, fmt::memory_buffer& out) {
  const Lines line{out};
  const auto relaxed = std::memory_order_relaxed;
  // The end first (Coordinator::apply_fence stores it after the kind).
  const std::int64_t fence_until = c.fence_until_ms.load(std::memory_order_acquire);
  const bool fence_up =
      fence_until != INT64_MIN && fence_until >= SystemClock::instance().wall_ms();
  const FenceGauge fence_kind = c.fence_kind.load(relaxed);
  line(
      "# HELP snowflake_cluster_fenced 1 while the cluster's fence is up (no ID is issued until "
      "it ends), by why it went up: history_lost (ZooKeeper lost or rolled back data), "
      "new_cluster (a root nobody vouched for).");
  line("# TYPE snowflake_cluster_fenced gauge");
  line("snowflake_cluster_fenced{{kind=\"new_cluster\"}} {}",
       fence_up && fence_kind == FenceGauge::new_cluster ? 1 : 0);
  line("snowflake_cluster_fenced{{kind=\"history_lost\"}} {}",
       fence_up && fence_kind == FenceGauge::history_lost ? 1 : 0);
  line(
      "# HELP snowflake_cluster_fence_end_seconds When the cluster's fence ends, in Unix "
      "seconds of ZooKeeper's clock; 0 when it has none.");
  line("# TYPE snowflake_cluster_fence_end_seconds gauge");
  line("snowflake_cluster_fence_end_seconds {}",
       fence_until == INT64_MIN ? 0.0 : static_cast<double>(fence_until) / 1000.0);
}

void render_coordination(const CoordinationGauges& c, BootClock::time_point now,
                         fmt::memory_buffer& out) {
  const Lines line{out};
  const auto relaxed = std::memory_order_relaxed;
  line("# HELP snowflake_zookeeper_connected 1 while a ZooKeeper session is connected.");
  line("# TYPE snowflake_zookeeper_connected gauge");
  line("snowflake_zookeeper_connected {}",
       c.zookeeper.load(relaxed) == ZkConnection::connected ? 1 : 0);
  line(
      "# HELP snowflake_pool_exhausted 1 while every worker ID of the recycle pool is in use "
      "and this daemon has none.");
  line("# TYPE snowflake_pool_exhausted gauge");
  line("snowflake_pool_exhausted {}", c.pool_exhausted.load(relaxed) ? 1 : 0);
  line(
      "# HELP snowflake_reaper 1 while this daemon's session holds the reaper's role (recycle: "
      "the one daemon that looks for stale worker IDs); the cluster's sum is 1.");
  line("# TYPE snowflake_reaper gauge");
  line("snowflake_reaper {}", c.reaper.load(relaxed) ? 1 : 0);
  line(
      "# HELP snowflake_form_policy_disagrees 1 while the cluster's form policy (snowflaked "
      "cluster forms) differs from this daemon's forms section: tags whose form they disagree "
      "on are refused (503 form_policy_changed) until it is restarted with the cluster's.");
  line("# TYPE snowflake_form_policy_disagrees gauge");
  line("snowflake_form_policy_disagrees {}", c.forms.disagrees() ? 1 : 0);
  const auto counter = [&](std::string_view name, std::string_view help,
                           const std::atomic<std::uint64_t>& value) {
    line("# HELP {} {}", name, help);
    line("# TYPE {} counter", name);
    line("{} {}", name, value.load(relaxed));
  };
  counter("snowflake_heartbeats_total", "Heartbeats written to ZooKeeper.", c.heartbeats);
  counter("snowflake_heartbeat_failures_total", "Heartbeats that failed (retried with backoff).",
          c.heartbeat_failures);
  counter("snowflake_heartbeat_retries_total",
          "Heartbeat writes refused because the worker-ID pool moved meanwhile (a release or "
          "reclaim elsewhere), read and sent again at once.",
          c.heartbeat_retries);
  counter("snowflake_zookeeper_sessions_total", "ZooKeeper sessions opened.", c.sessions);
  counter("snowflake_zookeeper_requests_total",
          "Requests sent to ZooKeeper over all of this daemon's sessions (pings not counted): its "
          "share of the ensemble's load.",
          zookeeper_requests_sent);
  counter("snowflake_worker_acquisitions_total", "Worker IDs acquired.", c.worker_acquisitions);
  counter("snowflake_workers_lost_total", "Worker IDs found taken or changed under us.",
          c.workers_lost);
  counter("snowflake_workers_reclaimed_total",
          "Stale worker IDs, and those stopped daemons marked released, this daemon returned to "
          "the pool.",
          c.workers_reclaimed);
  counter("snowflake_cluster_history_losses_total",
          "Times this daemon found that ZooKeeper had lost or rolled back some of the cluster's "
          "history (a wipe, a restore); it stopped issuing and fenced the cluster (a static "
          "daemon: froze the sequences).",
          c.history_losses);
  render_cluster_fence(c, out);
  const auto skew_ms = c.clock_skew_ms.load(relaxed);
  line("# HELP snowflake_clock_skew_seconds Wall clock minus ZooKeeper's, at the last heartbeat.");
  line("# TYPE snowflake_clock_skew_seconds gauge");
  line("snowflake_clock_skew_seconds {}", static_cast<double>(skew_ms) / 1000.0);
  if (const auto last = c.last_heartbeat.load(relaxed); last != BootClock::time_point{}) {
    const auto age = now - last;
    line(
        "# HELP snowflake_heartbeat_age_seconds Time since ZooKeeper last confirmed a write of our "
        "node (the claim or a heartbeat), by CLOCK_BOOTTIME (a suspend counts).");
    line("# TYPE snowflake_heartbeat_age_seconds gauge");
    line("snowflake_heartbeat_age_seconds {}",
         std::max(0.0, std::chrono::duration<double>(age).count()));
  }
  if (const auto size = c.pool_size.load(relaxed); size >= 0) {
    line(
        "# HELP snowflake_pool_size Worker IDs the cluster can hand out (recycle: the pool; "
        "sequential: the layout's).");
    line("# TYPE snowflake_pool_size gauge");
    line("snowflake_pool_size {}", size);
    line(
        "# HELP snowflake_pool_free Worker IDs left, as this daemon last read them (recycle: not "
        "in use; sequential: never handed out, as numbers are not reused).");
    line("# TYPE snowflake_pool_free gauge");
    line("snowflake_pool_free {}", c.pool_free.load(relaxed));
  }
}

void render_timings(const ConfiguredTimings& t, fmt::memory_buffer& out) {
  const auto gauge = [&out](std::string_view name, std::string_view key,
                            std::chrono::milliseconds value) {
    fmt::format_to(
        std::back_inserter(out),
        "# HELP {0} {1}, in seconds: alert rules scale with it.\n# TYPE {0} gauge\n{0} {2}\n", name,
        key, static_cast<double>(value.count()) / 1000.0);
  };
  gauge("snowflake_config_heartbeat_interval_seconds", "coordinator.heartbeat_interval_ms",
        t.heartbeat_interval);
  gauge("snowflake_config_lease_timeout_seconds", "coordinator.lease_timeout_ms", t.lease_timeout);
  gauge("snowflake_config_reclaim_after_seconds", "coordinator.reclaim_after_ms", t.reclaim_after);
  gauge("snowflake_config_max_skew_seconds", "coordinator.max_skew_ms", t.max_skew);
  gauge("snowflake_config_restore_grace_seconds", "coordinator.restore_grace_ms", t.restore_grace);
}

// The served certificate's expiry, the reloads of it (http/tls_reloader.hpp)
// and the handshakes that failed (http/server.hpp).
void render_tls(const TlsGauges& t, fmt::memory_buffer& out) {
  const auto relaxed = std::memory_order_relaxed;
  fmt::format_to(std::back_inserter(out),
                 "# HELP snowflake_tls_cert_expiry_timestamp_seconds When the certificate the "
                 "listeners serve expires (its notAfter), in Unix seconds.\n"
                 "# TYPE snowflake_tls_cert_expiry_timestamp_seconds gauge\n"
                 "snowflake_tls_cert_expiry_timestamp_seconds {}\n"
                 "# HELP snowflake_tls_cert_not_before_timestamp_seconds When the certificate "
                 "the listeners serve began (its notBefore), in Unix seconds.\n"
                 "# TYPE snowflake_tls_cert_not_before_timestamp_seconds gauge\n"
                 "snowflake_tls_cert_not_before_timestamp_seconds {}\n"
                 "# HELP snowflake_tls_reloads_total Changes of the TLS files taken up (ok) or "
                 "refused, the certificate served before kept (failed).\n"
                 "# TYPE snowflake_tls_reloads_total counter\n"
                 "snowflake_tls_reloads_total{{result=\"ok\"}} {}\n"
                 "snowflake_tls_reloads_total{{result=\"failed\"}} {}\n"
                 "# HELP snowflake_tls_reload_failing 1 while the TLS files on disk changed and "
                 "cannot be served (tried again at every look), the certificate loaded before "
                 "still served.\n"
                 "# TYPE snowflake_tls_reload_failing gauge\n"
                 "snowflake_tls_reload_failing {}\n"
                 "# HELP snowflake_tls_handshake_failures_total TLS handshakes that did not "
                 "complete (an untrusted certificate, no client certificate, plain HTTP, a "
                 "timeout), by listener.\n"
                 "# TYPE snowflake_tls_handshake_failures_total counter\n"
                 "snowflake_tls_handshake_failures_total{{listener=\"main\"}} {}\n"
                 "snowflake_tls_handshake_failures_total{{listener=\"admin\"}} {}\n",
                 t.cert_not_after_s.load(relaxed), t.cert_not_before_s.load(relaxed),
                 t.reloads_ok.load(relaxed), t.reloads_failed.load(relaxed),
                 t.reload_failing.load(relaxed) ? 1 : 0, t.handshakes_failed[0].load(relaxed),
                 t.handshakes_failed[1].load(relaxed));
}

}  // namespace

namespace {

// Strict sequences' ownership as this daemon sees it (strict_gate.hpp):
// max by tag of _owned is 0 while nobody hands a tag out.
void render_strict(const std::vector<std::pair<const SequenceEntry*, std::string>>& entries,
                   bool lease_valid, fmt::memory_buffer& out) {
  const Lines line{out};
  const auto relaxed = std::memory_order_relaxed;
  const auto per_strict = [&](std::string_view name, std::string_view type, std::string_view help,
                              auto value) {
    line("# HELP {} {}", name, help);
    line("# TYPE {} {}", name, type);
    for (const auto& [e, labels] : entries) {
      if (e->strict.strict()) line("{}{{{}}} {}", name, labels, value(*e));
    }
  };
  per_strict("snowflake_seq_strict_owned", "gauge",
             "1 while this daemon owns the strict tag and its worker-ID lease runs: it hands the "
             "tag's numbers out.",
             [lease_valid](const SequenceEntry& e) {
               return lease_valid && e.strict.owned_generation() != 0 ? 1 : 0;
             });
  per_strict("snowflake_seq_strict_owner_changes_total", "counter",
             "Changes of the strict tag's owner record this daemon has read (claims, takeovers, "
             "releases).",
             [&](const SequenceEntry& e) { return e.strict.owner_changes.load(relaxed); });
  per_strict("snowflake_seq_strict_not_owner_total", "counter",
             "Requests for the strict tag refused here with 503 not_owner (another daemon owns "
             "it, or nobody does during a takeover).",
             [&](const SequenceEntry& e) { return e.strict.refused.load(relaxed); });
  per_strict("snowflake_seq_strict_forwarded_total", "counter",
             "Requests for the strict tag passed on to its owner (another daemon) and answered "
             "by it; the owner's answer went back to the client.",
             [&](const SequenceEntry& e) { return e.strict.forwarded.load(relaxed); });
  per_strict("snowflake_seq_strict_forward_failures_total", "counter",
             "Requests for the strict tag passed on to its owner, or waiting for an owner to pass "
             "them to, that got no answer by the deadline: refused 503 not_owner, counted there "
             "too.",
             [&](const SequenceEntry& e) { return e.strict.forward_failures.load(relaxed); });
  per_strict("snowflake_seq_strict_ownerless_seconds", "gauge",
             "How long this daemon has known no owner of the strict tag that can hand it out "
             "(none recorded, or one whose run lost its worker ID and is being waited out); 0 "
             "while it has one.",
             [&](const SequenceEntry& e) {
               const std::int64_t since = e.strict.ownerless_since_ns.load(relaxed);
               if (since == 0) return std::string("0");
               const auto now = BootClock::now().time_since_epoch().count();
               return fmt::format("{:.1f}", static_cast<double>(now - since) / 1e9);
             });
}

// Each served sequence's gauges (sequence_registry.hpp), by tag.
void render_sequences(const SequenceRegistry& registry, bool lease_valid, fmt::memory_buffer& out) {
  const Lines line{out};
  const auto relaxed = std::memory_order_relaxed;
  // Each tag's entry, and for a tag that restarts each period each period
  // it holds now (the clock's and the next): {tag, period}.
  std::vector<std::pair<const SequenceEntry*, std::string>> entries;
  std::vector<PeriodicSequence::Hold> held;  // the periods' slots, until rendered
  for (const SequenceEntry* e : registry.entries()) {
    if (const PeriodicSequence* periodic = e->periodic.load(std::memory_order_acquire)) {
      held.push_back(periodic->hold());
      for (const PeriodSlot* slot : periodic->live(held.back())) {
        entries.emplace_back(&slot->entry,
                             fmt::format("tag=\"{}\",period=\"{}\"", e->tag, slot->period.key));
      }
    } else {
      entries.emplace_back(e, fmt::format("tag=\"{}\"", e->tag));
    }
  }
  line(
      "# HELP snowflake_seq_zookeeper_connected 1 while the sequences' ZooKeeper session is "
      "connected (new ranges can be taken).");
  line("# TYPE snowflake_seq_zookeeper_connected gauge");
  line("snowflake_seq_zookeeper_connected {}", registry.connected.load(relaxed) ? 1 : 0);
  const auto per_tag = [&](std::string_view name, std::string_view type, std::string_view help,
                           auto value) {
    line("# HELP {} {}", name, help);
    line("# TYPE {} {}", name, type);
    for (const auto& [e, labels] : entries) line("{}{{{}}} {}", name, labels, value(*e));
  };
  per_tag("snowflake_seq_numbers_total", "counter",
          "Sequence numbers handed out, per tag (and period, for a tag that restarts each one).",
          [&](const SequenceEntry& e) { return e.gauges.handed_out.load(relaxed); });
  per_tag("snowflake_seq_segment_numbers_total", "counter",
          "Sequence numbers handed out whole in segments to generators in other processes "
          "(CosId's segment distributor: PATCH /segments/<namespace>/<name>), per tag.",
          [&](const SequenceEntry& e) { return e.gauges.segment_numbers.load(relaxed); });
  per_tag("snowflake_seq_numbers_dropped_total", "counter",
          "Sequence numbers taken for a request that was then refused (a batch the buffer could "
          "not fill in time, or a refusal that came after some were taken): a gap, left out of "
          "the rate that sizes ranges, per tag.",
          [&](const SequenceEntry& e) { return e.gauges.dropped.load(relaxed); });
  per_tag("snowflake_seq_buffered", "gauge",
          "Sequence numbers this daemon holds and has not handed out, per tag.",
          [&](const SequenceEntry& e) { return e.gauges.left.load(relaxed); });
  per_tag("snowflake_seq_buffer_seconds", "gauge",
          "How long the buffered numbers last at the tag's current rate (+Inf at no rate): what "
          "this daemon serves through a ZooKeeper outage.",
          [&](const SequenceEntry& e) {
            const double seconds =
                seconds_left(e.gauges.left.load(relaxed), e.gauges.rate.load(relaxed));
            return seconds < 0 ? std::string("+Inf") : fmt::format("{:.1f}", seconds);
          });
  per_tag("snowflake_seq_step", "gauge", "The size of the last range taken, per tag.",
          [&](const SequenceEntry& e) { return e.gauges.step.load(relaxed); });
  per_tag("snowflake_seq_exhausted", "gauge",
          "1 while the tag has no number left to take (its numbers end below 2^63 - 1, or it "
          "was retired with seq raise --above 9223372036854775807): 410 sequence_exhausted once "
          "the buffer is empty.",
          [&](const SequenceEntry& e) { return e.exhausted.load(relaxed) ? 1 : 0; });
  per_tag("snowflake_seq_max", "gauge",
          "The last number the tag (its period) hands out: its --max, or its template's largest; "
          "-1 with none below 2^63 - 2, or before this daemon took a range.",
          [&](const SequenceEntry& e) { return e.gauges.last_number.load(relaxed); });
  per_tag("snowflake_seq_left_to_take", "gauge",
          "Numbers of the tag (its period) left in ZooKeeper below its --max after this daemon's "
          "last take (a fleet's lowest is the freshest); -1 as snowflake_seq_max.",
          [&](const SequenceEntry& e) { return e.gauges.left_to_take.load(relaxed); });
  per_tag("snowflake_seq_fetches_total", "counter", "Ranges taken from ZooKeeper, per tag.",
          [&](const SequenceEntry& e) { return e.gauges.fetches.load(relaxed); });
  per_tag("snowflake_seq_fetch_failures_total", "counter",
          "Attempts to take a range that failed (ZooKeeper away, lost races), per tag.",
          [&](const SequenceEntry& e) { return e.gauges.fetch_failures.load(relaxed); });
  render_strict(entries, lease_valid, out);
}

}  // namespace

// One line a series, in the order a scrape shows them: long, and clearer
// whole than cut into pieces that each render a few lines.
// NOLINTNEXTLINE(readability-function-size)
std::string Metrics::render(const Snapshot& s) const {
  fmt::memory_buffer out;
  const Lines line{out};

  line(
      "# HELP snowflake_build_info Build and identity of this daemon: what does not change while "
      "it runs.");
  line("# TYPE snowflake_build_info gauge");
  line(
      "snowflake_build_info{{version=\"{}\",revision=\"{}\",service=\"{}\",datacenter_id=\"{}\"}}"
      " 1",
      s.version, s.revision, s.service, s.datacenter_id);
  line("# HELP snowflake_worker_id The worker ID this daemon owns; absent while it owns none.");
  line("# TYPE snowflake_worker_id gauge");
  if (s.worker_id) line("snowflake_worker_id {}", *s.worker_id);
  line(
      "# HELP snowflake_ready 1 while GET /ready answers 200: a worker ID owned, its lease "
      "valid, and nothing else refusing (a floor ahead, a clock step back).");
  line("# TYPE snowflake_ready gauge");
  line("snowflake_ready {}", s.ready ? 1 : 0);
  line(
      "# HELP snowflake_stopping 1 once SIGTERM came: /ready answers 503 while requests are still "
      "served for http.shutdown_delay_ms, then the connections drain.");
  line("# TYPE snowflake_stopping gauge");
  line("snowflake_stopping {}", s.stopping ? 1 : 0);

  line("# HELP snowflake_http_requests_total HTTP requests by route and status code.");
  line("# TYPE snowflake_http_requests_total counter");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t i = 0; i < kStatuses.size(); ++i) {
      const auto n = requests_[r][i].load(std::memory_order_relaxed);
      if (n == 0) continue;
      const auto route = to_string(static_cast<Route>(r));
      if (kStatuses[i] == 0) {
        line("snowflake_http_requests_total{{route=\"{}\",code=\"other\"}} {}", route, n);
      } else {
        line("snowflake_http_requests_total{{route=\"{}\",code=\"{}\"}} {}", route, kStatuses[i],
             n);
      }
    }
  }

  line("# HELP snowflake_ids_issued_total IDs issued, all tags.");
  line("# TYPE snowflake_ids_issued_total counter");
  line("snowflake_ids_issued_total {}", ids_total_.load(std::memory_order_relaxed));
  line(
      "# HELP snowflake_form_ids_issued_total IDs issued per form they were handed out in "
      "(plain, opaque, uuid).");
  line("# TYPE snowflake_form_ids_issued_total counter");
  for (std::size_t f = 0; f < kIdFormCount; ++f) {
    line("snowflake_form_ids_issued_total{{form=\"{}\"}} {}", to_string(static_cast<IdForm>(f)),
         ids_by_form_[f].load(std::memory_order_relaxed));
  }

  line("# HELP snowflake_tag_ids_issued_total IDs issued per tag (the first {} tags seen).",
       max_tags_);
  line("# TYPE snowflake_tag_ids_issued_total counter");
  {
    std::shared_lock lock(tags_mutex_);
    std::vector<std::pair<std::string_view, std::uint64_t>> rows;
    rows.reserve(tags_.size());
    for (const auto& [tag, n] : tags_) rows.emplace_back(tag, n->load(std::memory_order_relaxed));
    std::sort(rows.begin(), rows.end());
    // Tags are [A-Za-z0-9._-]: nothing to escape in a label value.
    for (const auto& [tag, n] : rows)
      line("snowflake_tag_ids_issued_total{{tag=\"{}\"}} {}", tag, n);
  }
  line("# HELP snowflake_untracked_tag_ids_issued_total IDs issued for tags beyond the cap.");
  line("# TYPE snowflake_untracked_tag_ids_issued_total counter");
  line("snowflake_untracked_tag_ids_issued_total {}",
       ids_untracked_tags_.load(std::memory_order_relaxed));

  line(
      "# HELP snowflake_sequence_waits_total Times a time unit's sequence was used up and the "
      "generator waited for the next unit.");
  line("# TYPE snowflake_sequence_waits_total counter");
  line("snowflake_sequence_waits_total {}", s.generator.sequence_waits);
  line("# HELP snowflake_clock_backward_waits_total Small wall-clock steps back waited out.");
  line("# TYPE snowflake_clock_backward_waits_total counter");
  line("snowflake_clock_backward_waits_total {}", s.generator.backward_waits);
  line(
      "# HELP snowflake_clock_backward_refusals_total Requests refused because the wall clock "
      "was behind the last issued ID.");
  line("# TYPE snowflake_clock_backward_refusals_total counter");
  line("snowflake_clock_backward_refusals_total {}", s.generator.backward_refusals);

  line("# HELP snowflake_lease_valid 1 while this daemon may issue IDs.");
  line("# TYPE snowflake_lease_valid gauge");
  line("snowflake_lease_valid {}", s.lease_state == LeaseState::valid ? 1 : 0);
  line("# HELP snowflake_lease_state Lease state (one series set to 1).");
  line("# TYPE snowflake_lease_state gauge");
  for (auto state : kLeaseStates) {
    line("snowflake_lease_state{{state=\"{}\"}} {}", to_string(state),
         state == s.lease_state ? 1 : 0);
  }
  line(
      "# HELP snowflake_lease_remaining_seconds Time left on the lease: +Inf when it does not "
      "expire (static mode), 0 when not held.");
  line("# TYPE snowflake_lease_remaining_seconds gauge");
  if (s.lease_state != LeaseState::valid) {
    line("snowflake_lease_remaining_seconds 0");
  } else if (s.lease_remaining.count() < 0) {
    line("snowflake_lease_remaining_seconds +Inf");
  } else {
    line("snowflake_lease_remaining_seconds {}",
         static_cast<double>(s.lease_remaining.count()) / 1000.0);
  }

  render_leases(out);

  line(
      "# HELP snowflake_refusals_total Requests answered 503, by route and error code (every "
      "code of route id always; of the other routes once counted).");
  line("# TYPE snowflake_refusals_total counter");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t i = 0; i < kRefusalCodes.size(); ++i) {
      const auto n = refusals_[r][i].load(std::memory_order_relaxed);
      if (n == 0 && static_cast<Route>(r) != Route::id) continue;
      line("snowflake_refusals_total{{route=\"{}\",code=\"{}\"}} {}",
           to_string(static_cast<Route>(r)), kRefusalCodes[i], n);
    }
  }

  line(
      "# HELP snowflake_http_request_duration_seconds Time to answer a routed request, from "
      "parsed request to response, by route (routes once asked).");
  line("# TYPE snowflake_http_request_duration_seconds histogram");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    std::uint64_t cumulative = 0;
    for (const auto& bucket : durations_[r]) cumulative += bucket.load(std::memory_order_relaxed);
    if (cumulative == 0) continue;
    const auto route = to_string(static_cast<Route>(r));
    cumulative = 0;
    for (std::size_t i = 0; i < durations_[r].size(); ++i) {
      cumulative += durations_[r][i].load(std::memory_order_relaxed);
      if (i < kDurationBuckets.size()) {
        line("snowflake_http_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}", route,
             kDurationBuckets[i], cumulative);
      } else {
        line("snowflake_http_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}", route,
             cumulative);
      }
    }
    line("snowflake_http_request_duration_seconds_sum{{route=\"{}\"}} {}", route,
         static_cast<double>(duration_sum_ns_[r].load(std::memory_order_relaxed)) / 1e9);
    line("snowflake_http_request_duration_seconds_count{{route=\"{}\"}} {}", route, cumulative);
  }

  if (s.coordination) render_coordination(*s.coordination, s.now, out);
  if (s.timings) render_timings(*s.timings, out);
  if (s.sequences) render_sequences(*s.sequences, s.lease_state == LeaseState::valid, out);
  if (tls_.enabled.load(std::memory_order_relaxed)) render_tls(tls_, out);
  return fmt::to_string(out);
}

}  // namespace snowflake
