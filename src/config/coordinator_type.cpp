#include "snowflake/config/coordinator_type.hpp"

namespace snowflake {

std::string_view to_string(CoordinatorType type) {
  switch (type) {
    case CoordinatorType::static_id:
      return "static";
    case CoordinatorType::sequential:
      return "sequential";
    case CoordinatorType::recycle:
      return "recycle";
  }
  return "unknown";
}

std::optional<CoordinatorType> parse_coordinator_type(std::string_view text) {
  for (const auto type :
       {CoordinatorType::static_id, CoordinatorType::sequential, CoordinatorType::recycle}) {
    if (to_string(type) == text) return type;
  }
  return std::nullopt;
}

}  // namespace snowflake
