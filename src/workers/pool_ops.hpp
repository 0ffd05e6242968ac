#pragma once
// What RecyclePool's moves share (recycle_pool.cpp, recycle_pool_returns.cpp):
// how a race looks, which names are worker IDs, and how often to read again.

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/workers/recycle_pool.hpp"

namespace snowflake::coord {

inline constexpr int kMaxClaimAttempts = 5;  // re-reads after a race before giving up for now

// A conditional op that lost to another writer: read again.
inline bool is_race(const ZkError& e) {
  return e.code == ZkErrc::bad_version || e.code == ZkErrc::no_node ||
         e.code == ZkErrc::node_exists;
}

// The worker ID a pool node's name spells, if the pool has it.
inline std::optional<std::uint32_t> pool_worker_id(const std::string& name, std::uint32_t max_id) {
  const auto id = worker_id_of_node(name);
  if (!id || *id > max_id) return std::nullopt;
  return id;
}

inline CoordError lost(const std::string& path, std::string_view why) {
  return {CoordErrc::lost, fmt::format("{} {}", path, why)};
}

}  // namespace snowflake::coord
