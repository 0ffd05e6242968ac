#pragma once
// coordinator.type: where a daemon's worker ID comes from. Parsed once, by
// the config; spelled as text only where it is written out (the config, the
// cluster root, the state file, /status, the logs).

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace snowflake {

enum class CoordinatorType : std::uint8_t {
  static_id,   // "static": the config's worker ID, no ZooKeeper
  sequential,  // "sequential": a persistent sequential node per host:port, as Leaf's
  recycle,     // "recycle": the notuse/inuse pool, for short-lived instances
};

// "static", "sequential", "recycle".
std::string_view to_string(CoordinatorType type);
// nullopt for any other text.
std::optional<CoordinatorType> parse_coordinator_type(std::string_view text);

}  // namespace snowflake

template <>
struct fmt::formatter<snowflake::CoordinatorType> : fmt::formatter<std::string_view> {
  auto format(snowflake::CoordinatorType type, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(snowflake::to_string(type), ctx);
  }
};
