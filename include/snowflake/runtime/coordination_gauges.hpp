#pragma once
// What the coordinator reports about itself, for /status and /metrics:
// relaxed atomics it writes and the HTTP side reads, so neither knows the
// other's types.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "snowflake/base/clock.hpp"
#include "snowflake/ids/form_policy.hpp"

namespace snowflake {

enum class ZkConnection : std::uint8_t { not_used, connecting, connected };

inline std::string_view to_string(ZkConnection c) noexcept {
  switch (c) {
    case ZkConnection::not_used:
      return "not_used";
    case ZkConnection::connecting:
      return "connecting";
    case ZkConnection::connected:
      return "connected";
  }
  return "unknown";
}

// What /status says of the cluster's identity and history, in words: set
// rarely (a root read that changed something, a loss), read by /status.
struct ClusterWords {
  std::string cluster_id;
  std::string fence_reason;
  std::int64_t fence_at_ms = 0;
  std::string loss_kind;  // "" while none was noticed
  std::string loss_detail;
  std::int64_t loss_ms = 0;  // wall clock
};

class ClusterReport {
 public:
  ClusterWords get() const {
    std::lock_guard lock(mutex_);
    return words_;
  }
  template <class Change>
  void update(Change change) {
    std::lock_guard lock(mutex_);
    change(words_);
  }

 private:
  mutable std::mutex mutex_;
  ClusterWords words_;
};

// A fence's kind as the gauges hold it (coord::FenceKind, plus none).
enum class FenceGauge : std::uint8_t { none, new_cluster, history_lost };

// Requests this process has sent to ZooKeeper, over all of its sessions
// (coord::ZkSession counts each): a daemon's share of the ensemble's load,
// at its start and at rest (docs/operations.md, "Sizing ZooKeeper").
inline std::atomic<std::uint64_t> zookeeper_requests_sent{0};

struct CoordinationGauges {
  std::atomic<ZkConnection> zookeeper{ZkConnection::not_used};
  std::atomic<bool> pool_exhausted{false};
  std::atomic<std::uint64_t> heartbeats{0};  // successful
  std::atomic<std::uint64_t> heartbeat_failures{0};
  // Heartbeat writes refused because the pool moved meanwhile (a release or
  // reclaim elsewhere), read and sent again: what a fleet's stops cost the
  // daemons that keep running (one a heartbeat, unless the pool moves again
  // while it reads and writes).
  std::atomic<std::uint64_t> heartbeat_retries{0};
  // The most of them one heartbeat had (tests/bench/scale_sim.py's figure
  // for a mass stop: max/beat).
  std::atomic<std::uint32_t> heartbeat_retries_most{0};
  std::atomic<std::uint64_t> sessions{0};  // ZooKeeper sessions opened
  std::atomic<std::uint64_t> worker_acquisitions{0};
  std::atomic<std::uint64_t> workers_lost{0};       // our node taken or changed under us
  std::atomic<std::uint64_t> workers_reclaimed{0};  // stale nodes this daemon returned to the pool
  std::atomic<std::int64_t> clock_skew_ms{0};       // wall clock minus ZooKeeper's, last heartbeat
  // When (BootClock: when it was sent) the last write of our node that
  // ZooKeeper confirmed was made: the claim, then each heartbeat. The
  // clock's epoch: none yet.
  std::atomic<BootClock::time_point> last_heartbeat{};
  // The recycle pool, as this daemon's reads last saw it (a heartbeat's, a
  // claim's, a reaper pass's); -1: not known (other modes, or none yet).
  std::atomic<std::int64_t> pool_size{-1};
  std::atomic<std::int64_t> pool_free{-1};
  // This daemon's session holds the reaper's role (workers/candidate_line.hpp):
  // the cluster's sum is 1 while any recycle daemon is connected.
  std::atomic<bool> reaper{false};
  // The cluster's migration floor in force (Unix ms; INT64_MIN: none).
  std::atomic<std::int64_t> migration_floor_ms{INT64_MIN};
  // The cluster's fence in force (cluster/cluster_identity.hpp; Unix ms,
  // ZooKeeper's time; INT64_MIN: none), and its kind.
  std::atomic<std::int64_t> fence_until_ms{INT64_MIN};
  std::atomic<FenceGauge> fence_kind{FenceGauge::none};
  // Losses of the cluster's history this daemon noticed (cluster_history.hpp).
  std::atomic<std::uint64_t> history_losses{0};
  ClusterReport cluster;
  // The cluster's form policy against this daemon's (form_policy.hpp).
  ClusterForms forms;
};

}  // namespace snowflake
