#pragma once
// The cluster's ID layout lives in the root node's data, written by the
// first daemon. Daemons with different layouts in one cluster could issue
// the same ID, so one whose layout differs refuses to start.

#include <string>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/zk_session.hpp"
#include "snowflake/id_layout.hpp"

namespace snowflake::coord {

// Stores `ours` in `root` if nobody has yet, else compares. Errors:
// layout_mismatch (naming both layouts), zookeeper.
Result<void, CoordError> check_cluster_layout(ZkSession& zk, const std::string& root,
                                              const LayoutSettings& ours);

}  // namespace snowflake::coord
