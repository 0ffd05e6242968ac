#pragma once
// Fencing a cluster in ZooKeeper (what a fence is: cluster_identity.hpp):
// the root's fence raised to cover every lease an earlier owner could still
// hold, and every sequence frozen. Written by a daemon that notices that
// ZooKeeper lost some of the cluster's history (cluster_history.hpp), by
// `snowflaked cluster fence` after a restore, and, as a new_cluster fence,
// by a daemon that makes a root nobody vouched for. `snowflaked cluster
// create` lifts a new_cluster fence, never a history_lost one.
//
// Daemons read the fence with the root, as they read the migration floor
// (Coordinator::read_migration_floor): a claim is installed only after a
// read of the root on the claim's session, so a claim either sees the fence
// or came before it and is then raised above it by the root's watch, and
// confirms that in <root>/floor_acks (migration_floor.hpp), which the
// command waits for.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

// ZooKeeper's time now: the ctime of a probe node made (ephemeral) and
// deleted at once under `root`, or under its parent while the root does not
// exist. zookeeper: no probe could be made (no right to create one).
Result<std::int64_t, CoordError> zookeeper_now(ZkSession& zk, const std::string& root);

struct FenceRequest {
  FenceKind kind = FenceKind::history_lost;
  std::chrono::milliseconds length{0};  // from ZooKeeper's time now (fence_length)
  std::string reason;
};

// The fence `request` asks for, written ZooKeeper's time `now_ms`.
ClusterFence fence_from(const FenceRequest& request, std::int64_t now_ms);

// Makes the root's fence cover `request` (it only moves later, and a
// history_lost one never becomes new_cluster); the root must exist.
// Returns the fence in force.
Result<ClusterFence, CoordError> raise_fence(ZkSession& zk, const std::string& root,
                                             const FenceRequest& request);

// `snowflaked cluster create` on a root that exists: lifts a new_cluster
// fence, finds none, or refuses a history_lost one (CoordErrc::history_lost,
// naming it). A root a daemon made in a run of one of `vouch`'s sessions is
enum class Lifted : std::uint8_t { none, lifted, lifted_and_vouched };
Result<Lifted, CoordError> lift_new_cluster_fence(ZkSession& zk, const std::string& root,
                                                  const ClusterVouch& vouch);

}  // namespace snowflake::coord
