#pragma once
// A JSON integer that fits T, or nullopt. nlohmann's get<T>() converts a
// float or an out-of-range integer with a plain cast: undefined behaviour for
// 1e90, a wrapped value for a port of -1. What we read from ZooKeeper nodes
// and the state file is anybody's to write, so it goes through this.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace snowflake {

template <class T>
std::optional<T> json_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (std::in_range<T>(i)) return static_cast<T>(i);
  }
  return std::nullopt;
}

// The integer at `key` of object `j`, which must fit T. Throws (json's
// out_of_range for a missing key, std::out_of_range otherwise): for decoders
// that turn any exception into "unreadable".
template <class T>
T json_integer_at(const nlohmann::json& j, const char* key) {
  if (const auto v = json_integer<T>(j.at(key))) return *v;
  throw std::out_of_range(key);
}

}  // namespace snowflake
