#pragma once
// What `pool floor` and `cluster fence` both wait for: every owner of a
// worker ID that may still issue has confirmed, with its session's ack
// (cluster/migration_floor.hpp), that its generator honours the cluster's
// floor, or its lease has run out.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/config/config.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::commands {

// Polls until every such owner has confirmed `floor_ms`; prints `confirmed`
// and returns 0, or after `timeout` (default: the lease + safety margin +
// 10 s) names those that did not and returns 1.
int await_floor_confirmations(coord::ZkSession& zk, const Config& config, std::int64_t floor_ms,
                              std::optional<std::chrono::milliseconds> timeout,
                              const std::string& confirmed);

}  // namespace snowflake::commands
