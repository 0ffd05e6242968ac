#pragma once
// Who a cluster is, and whether it is fenced: two more fields of the root's
// data, beside the layout, strategy, datacenter, opaque key and migration
// floor (cluster_root.hpp, migration_floor.hpp).
//
//   <root>  {..., "cluster_id": "<32 hex digits>",
//                 "fence": {"until_ms": F, "kind": "history_lost", "at_ms": T,
//                           "reason": "..."}}
//
// The cluster ID is drawn once, when the root is first made, and every
// daemon keeps it in its state directory (state/cluster_file.hpp): ZooKeeper
// can lose or roll back what it acknowledged (a wipe, a restore of an older
// copy), and a daemon that knows its cluster is how the cluster notices
// (cluster_history.hpp). Kafka's brokers keep `cluster.id` in
// meta.properties for the same reason.
//
// A fence is a time: no worker ID issues an ID at or below `until_ms` (Unix
// ms), as if it were a migration floor, and while it is up sequences are
// frozen (sequence_node.hpp). It is how the cluster outlives its own
// history: every lease any earlier owner could still hold ends before it.
//   - history_lost: ZooKeeper lost or rolled back what it had acknowledged;
//     written by a daemon that noticed, or by `snowflaked cluster fence`.
//   - new_cluster: a daemon made the root and nothing proved that no earlier
//     cluster had lived there (a wipe leaves an empty ensemble too); lifted
//     by `snowflaked cluster create`, which vouches that the cluster is new.
// A fence only ever moves later, and a new_cluster fence becomes a
// history_lost one when a daemon notices a loss; `cluster create` never
// lifts that.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/config/config.hpp"

namespace snowflake::coord {

enum class FenceKind : std::uint8_t { new_cluster, history_lost };
std::string_view to_string(FenceKind kind) noexcept;
std::optional<FenceKind> parse_fence_kind(std::string_view text) noexcept;

struct ClusterFence {
  std::int64_t until_ms = 0;  // ZooKeeper's time: nothing at or below it
  FenceKind kind = FenceKind::history_lost;
  std::int64_t at_ms = 0;  // ZooKeeper's time when it was written
  std::string reason{};    // for people: what happened, who fenced
  bool operator==(const ClusterFence&) const = default;
};

// How long a fence written now lasts: every lease an earlier owner could
// still hold has run out by then, whatever the clocks did. A lease ends
// lease_timeout after the heartbeat that granted it, at a time stamped by a
// wall clock at most max_skew ahead of ZooKeeper's; safety_margin covers
// ZooKeeper servers' clocks (another server may stamp the fence).
std::chrono::milliseconds fence_length(const CoordinatorSettings& s) noexcept;

// The cluster ID the root's data records, if any (a root written before
// 0.5.0 has none).
std::optional<std::string> recorded_cluster_id(std::string_view root_data);
// The fence the root's data records, if any.
std::optional<ClusterFence> recorded_fence(std::string_view root_data);
// The root's data with the ID, or the fence, set (every other field kept).
std::string with_cluster_id(std::string_view root_data, std::string_view id);
std::string with_fence(std::string_view root_data, const ClusterFence& fence);
std::string without_fence(std::string_view root_data);

// 128 random bits, as 32 lowercase hex digits.
std::string new_cluster_id();
bool is_cluster_id(std::string_view text) noexcept;

// One fence that holds both: the later end, and history_lost over
// new_cluster (a loss noticed is never lifted as if the cluster were new).
ClusterFence combined(const ClusterFence& a, const ClusterFence& b);

}  // namespace snowflake::coord
