#pragma once
// The root node's data says how the cluster issues IDs: its ID layout, its
// worker-ID strategy and, in a layout with a datacenter field, its
// datacenter ID, written by the first daemon. Daemons with another layout
// could issue the same ID; daemons of another strategy hand out the same
// worker IDs by other rules (a sequential node's number is a pool member's
// ID too); a daemon of another datacenter on this datacenter's pool would
// stamp the other datacenter's field on worker IDs this pool hands out
// again, and the other datacenter's own pool hands them out too. A daemon
// with an opaque key records its fingerprint (forms/opaque_ids.hpp): a
// daemon with another key would hand out another permutation of the same
// tags, whose opaque IDs can meet. Each refuses to start, naming both.

#include <string>
#include <string_view>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/zk_session.hpp"
#include "snowflake/coordinator_type.hpp"
#include "snowflake/id_layout.hpp"

namespace snowflake::coord {

// Stores `layout`, `strategy`, `datacenter_id` and the opaque key's
// fingerprint (if any) in `root` if nobody has yet (a root written before
// they were recorded gets ours added), else compares. Errors:
// layout_mismatch, strategy_mismatch, datacenter_mismatch,
// opaque_key_mismatch (naming both), zookeeper.
Result<void, CoordError> check_cluster_root(ZkSession& zk, const std::string& root,
                                            const LayoutSettings& layout, CoordinatorType strategy,
                                            std::uint32_t datacenter_id = 0,
                                            std::string_view opaque_key = {});

}  // namespace snowflake::coord
