#pragma once
// A JSON integer that fits T, or nullopt, and a decoder's frame around it. nlohmann's get<T>()
// converts a float or an out-of-range integer with a plain cast: undefined behaviour for 1e90, a
// wrapped value for a port of -1. What we read from ZooKeeper nodes and the state file is anybody's
// to write, so it goes through this.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
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

// `read(j)` of the JSON object in `text`, or nullopt when `text` is not one or
// `read` throws (a missing key, a wrong type, an integer that does not fit):
// one place that says what "unreadable" means for every decoder.
template <class T, class Read>
std::optional<T> decode_json_object(std::string_view text, Read read) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    return read(j);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  } catch (const std::out_of_range&) {  // from json_integer_at()
    return std::nullopt;
  }
}

}  // namespace snowflake
