#pragma once
// What `snowflaked pool floor` tells the operator, as text: the Leaf cluster
// it read, the floor it set, and the owners that have not confirmed it.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/migration/leaf_import.hpp"
#include "snowflake/migration/raise_floor.hpp"

namespace snowflake::report {

// Each server of the Leaf cluster at `root` with its last report, then how
// the largest ID Leaf can have issued follows from the newest one.
std::string to_text(const migration::LeafCluster& leaf, const std::string& root,
                    std::int64_t margin_ms);

// The floor now in force on `root`, and a note when it is ahead of `now_ms`.
std::string to_text(const coord::MigrationFloor& floor, const std::string& root,
                    std::int64_t now_ms);

// Why the command gives up after `patience`: each owner that did not confirm.
std::string to_text(const std::vector<migration::UnconfirmedOwner>& pending,
                    std::chrono::milliseconds patience);

}  // namespace snowflake::report
