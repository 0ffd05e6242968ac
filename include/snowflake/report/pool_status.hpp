#pragma once
// `snowflaked pool status`: what an operator needs to see of a recycle
// pool — which worker IDs are taken, by whom, how long since each owner's
// last heartbeat (by ZooKeeper's clock, the one the reaper goes by), and
// every floor. Read-only but for one ephemeral node it creates and deletes
// to learn ZooKeeper's current time.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::report {

struct PoolMember {
  std::uint32_t worker_id = 0;
  std::int64_t floor =
      0;  // free: the earlier owners' last possible instant; taken: the owner's start floor
  // Taken IDs only (unset for free ones, or if the node does not hold our JSON).
  std::optional<coord::InuseData> owner_data;
  std::int64_t last_heartbeat_ms = 0;  // ZooKeeper's time of the owner's last write
  std::int64_t heartbeat_age_ms = 0;   // now - last_heartbeat_ms, by ZooKeeper's clock
  // Free IDs only: the node's floor cannot be read, so it is never claimed.
  bool unusable = false;
};

struct PoolStatus {
  std::string pool;  // <root>/pool
  // The datacenter the root records (a layout with a datacenter field).
  std::optional<std::uint32_t> datacenter_id;
  // The cluster's migration floor, if one was set (snowflaked pool floor).
  std::optional<coord::MigrationFloor> floor;
  std::uint64_t size = 0;
  bool complete = false;
  std::int64_t now_ms = 0;
  bool now_from_zookeeper = true;  // false: no right to create the probe node; the local clock
  std::chrono::milliseconds reclaim_after{0};
  std::vector<PoolMember> inuse;
  std::vector<PoolMember> notuse;  // unusable ones included
  std::size_t unusable() const;
};

// "live" (heartbeat within its lease), "lease_expired" (its owner has
// stopped issuing), "reclaimable" (older than reclaim_after: the next
// heartbeat of any daemon returns it to the pool), or "unknown" (not our JSON).
std::string_view owner_state(const PoolMember& taken, std::chrono::milliseconds reclaim_after);

Result<PoolStatus, coord::CoordError> read_pool_status(coord::ZkSession& zk,
                                                       const std::string& root,
                                                       std::chrono::milliseconds reclaim_after);

nlohmann::ordered_json to_json(const PoolStatus& status);
std::string to_text(const PoolStatus& status);

}  // namespace snowflake::report
