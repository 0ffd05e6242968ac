#pragma once
// The root node's data says how the cluster issues IDs: its ID layout and
// its worker-ID strategy, written by the first daemon. Daemons with another
// layout could issue the same ID; daemons of another strategy hand out the
// same worker IDs by other rules (a sequential node's number is a pool
// member's ID too). Either refuses to start, naming both.

#include <string>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/zk_session.hpp"
#include "snowflake/id_layout.hpp"

namespace snowflake::coord {

// Stores `layout` and `strategy` in `root` if nobody has yet (a root written
// before strategies were recorded gets ours added), else compares. Errors:
// layout_mismatch, strategy_mismatch (naming both), zookeeper.
Result<void, CoordError> check_cluster_root(ZkSession& zk, const std::string& root,
                                            const LayoutSettings& layout,
                                            const std::string& strategy);

}  // namespace snowflake::coord
