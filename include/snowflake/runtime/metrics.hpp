#pragma once
// Counters for /metrics, cheap enough for every request: fixed arrays of
// relaxed atomics, and a per-tag map that stops growing at a cap so that
// random tags cannot grow memory (IDs of further tags are still counted, in
// one series without a tag label).

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/ids/form.hpp"
#include "snowflake/ids/generator.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/runtime/tls_gauges.hpp"
#include "snowflake/sequences/registry.hpp"

namespace snowflake {

// The coordinator's configured timings (ZooKeeper modes), exported so that
// alert rules can scale with them instead of assuming the defaults.
struct ConfiguredTimings {
  std::chrono::milliseconds heartbeat_interval;
  std::chrono::milliseconds lease_timeout;
  std::chrono::milliseconds reclaim_after;
  std::chrono::milliseconds max_skew;
  std::chrono::milliseconds restore_grace;
};

enum class Route : std::uint8_t {
  id,
  seq,
  decode,
  health,
  ready,
  status,
  metrics,
  openapi,
  leaf_id,
  leaf_decode,
  leaf_segment,
  leases,
  other
};
inline constexpr std::size_t kRouteCount = 13;
std::string_view to_string(Route route) noexcept;

class Metrics {
 public:
  explicit Metrics(std::size_t max_tags);

  TlsGauges& tls() noexcept { return tls_; }

  void count_request(Route route, unsigned status) noexcept;
  void count_ids(std::string_view tag, std::uint64_t n, IdForm form = IdForm::plain);
  // A 503 on `route`, by its error code (one of docs/api.md's; anything
  // else: "other").
  void count_refusal(Route route, std::string_view code) noexcept;
  // How long the router took to answer on `route`: fixed buckets, two
  // relaxed adds.
  void observe_duration(Route route, std::chrono::nanoseconds took) noexcept;
  // A worker-ID lease request answered: taken, renewed, given back, lost
  // (410: its holder must take a new one) or refused (503).
  // By pool (the request's; a refusal naming no pool that exists is not
  // counted by pool: its name is the asker's).
  void count_lease(const LeaseRequest& request, const LeaseCall::Outcome& outcome) noexcept;
  // A named lease pool's worker IDs and how many are held, as its last
  // reaping pass saw them (the cluster's own: snowflake_pool_size).
  void set_lease_pool(const std::string& pool, std::uint32_t size, std::uint32_t in_use) noexcept;
  // The named lease pools a reaping pass has seen, by name (for /status).
  struct LeasePoolSeen {
    std::string name;
    std::uint32_t size = 0;
    std::uint32_t in_use = 0;
  };
  std::vector<LeasePoolSeen> lease_pools_seen() const;

  // Prometheus text exposition format 0.0.4. The generator's and lease's
  // figures are read at render time rather than copied on every request.
  struct Snapshot {
    IdGenerator::Stats generator;
    LeaseState lease_state;
    std::optional<std::uint32_t> worker_id;  // none while no worker ID is owned
    bool ready = false;                      // what /ready answers: 200 or not
    std::string_view version;
    std::string_view revision;
    std::string_view service;
    const CoordinationGauges* coordination = nullptr;
    // Lease::Status::remaining: -1 ms when there is no deadline.
    std::chrono::milliseconds lease_remaining{-1};
    // The monotonic clock now, for the age of the last heartbeat.
    BootClock::time_point now{};
    std::optional<ConfiguredTimings> timings{};  // ZooKeeper modes only
    std::uint32_t datacenter_id = 0;
    const SequenceRegistry* sequences = nullptr;  // none served: no sequence series
    bool stopping = false;                        // SIGTERM came: /ready says 503 stopping
  };
  std::string render(const Snapshot& snapshot) const;

 private:
  // Every status the service answers with; anything else lands in "other".
  static constexpr std::array<unsigned, 14> kStatuses = {200, 400, 401, 403, 404, 405, 408,
                                                         410, 413, 414, 431, 500, 503, 0};
  static std::size_t status_index(unsigned status) noexcept;

  std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kRouteCount> requests_{};

 public:
  // The 503 codes, as docs/api.md lists them (and /health's); the last is
  // "other".
  // scripts/check-doc-facts.py holds the two to each other.
  static constexpr std::array<std::string_view, 22> kRefusalCodes = {"not_ready",
                                                                     "lease_expired",
                                                                     "clock_skew",
                                                                     "clock_moved_backwards",
                                                                     "clock_before_epoch",
                                                                     "time_exhausted",
                                                                     "time_not_reserved",
                                                                     "floor_ahead",
                                                                     "cluster_fenced",
                                                                     "unhealthy",
                                                                     "sequence_unavailable",
                                                                     "sequence_frozen",
                                                                     "period_exhausted",
                                                                     "period_closed",
                                                                     "not_owner",
                                                                     "sequences_disabled",
                                                                     "stopping",
                                                                     "form_policy_changed",
                                                                     "leases_disabled",
                                                                     "pool_exhausted",
                                                                     "lease_unavailable",
                                                                     "other"};
  // Upper bounds of the request-duration buckets, in seconds (+Inf implied).
  static constexpr std::array<double, 12> kDurationBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};

 private:
  std::array<std::array<std::atomic<std::uint64_t>, kRefusalCodes.size()>, kRouteCount> refusals_{};
  // Per route and bucket, not cumulative (one add per request); the last is +Inf.
  std::array<std::array<std::atomic<std::uint64_t>, kDurationBuckets.size() + 1>, kRouteCount>
      durations_{};
  std::array<std::atomic<std::uint64_t>, kRouteCount> duration_sum_ns_{};
  std::atomic<std::uint64_t> ids_total_{0};
  std::array<std::atomic<std::uint64_t>, kIdFormCount> ids_by_form_{};
  std::atomic<std::uint64_t> ids_untracked_tags_{0};
  // By LeaseEvent.
  enum class LeaseEvent : std::uint8_t { taken, renewed, given_back, lost, refused };
  static constexpr std::array<std::string_view, 5> kLeaseEvents = {"taken", "renewed", "given_back",
                                                                   "lost", "refused"};
  // The lease metrics' lines (metrics_leases.cpp).
  void render_leases(fmt::memory_buffer& out) const;
  struct LeasePoolFigures {
    std::array<std::uint64_t, kLeaseEvents.size()> events{};
    std::optional<std::uint32_t> size;  // named pools: seen by a reaping pass
    std::uint32_t in_use = 0;
  };
  // Few: the cluster's and the named pools (leases.max_pools at most).
  mutable std::mutex leases_mutex_;
  std::map<std::string, LeasePoolFigures, std::less<>> leases_;
  TlsGauges tls_;

  const std::size_t max_tags_;
  mutable std::shared_mutex tags_mutex_;
  // Looks tags up by string_view, without building a std::string per request.
  struct TagHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  // Node-based map: the counters never move once inserted.
  std::unordered_map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>, TagHash,
                     std::equal_to<>>
      tags_;
};

}  // namespace snowflake
