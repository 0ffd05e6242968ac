#pragma once
// Raising the cluster's migration floor (cluster/migration_floor.hpp says what
// it is and how a serving daemon honours it), and the owners
// `snowflaked pool floor` still waits for before it may exit 0.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::migration {

// Raises the root's floor to `floor` (a versioned write; a recorded floor at
// or above it is kept). Returns the floor in force afterwards.
Result<coord::MigrationFloor, coord::CoordError> raise_migration_floor(
    coord::ZkSession& zk, const std::string& root, const coord::MigrationFloor& floor);

// An owner that may still issue and has not confirmed the floor.
struct UnconfirmedOwner {
  std::uint32_t worker_id = 0;
  std::string owner;  // "host:port pid N", or the node's name
  std::string why;    // what it lacks
};

// Every owner of a worker ID of `strategy` ("recycle": the pool's inuse
// nodes; "sequential": the forever nodes) that may still issue, without a
// confirmation of `floor_ms`: one whose session holds its alive node and has
// not confirmed, or one cut off from ZooKeeper whose lease (its node's last
// write + its lease + `margin`, in ZooKeeper's time; `lease` for a node of
// 0.1, which names none) has not run out. For each,
// the alive node is read first, then the owner's node, then ZooKeeper's
// time: a heartbeat between two reads can only make a later one stricter.
Result<std::vector<UnconfirmedOwner>, coord::CoordError> unconfirmed_owners(
    coord::ZkSession& zk, const std::string& root, CoordinatorType strategy, std::int64_t floor_ms,
    std::chrono::milliseconds lease, std::chrono::milliseconds margin);

}  // namespace snowflake::migration
