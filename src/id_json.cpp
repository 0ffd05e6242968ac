#include "snowflake/id_json.hpp"

#include <charconv>
#include <string>

#include "snowflake/time_format.hpp"

namespace snowflake {

std::optional<std::uint64_t> parse_id(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc{} || end != text.data() + text.size() || id >> kIdBits != 0) {
    return std::nullopt;
  }
  return id;
}

nlohmann::ordered_json decoded_id_to_json(const DecodedId& decoded) {
  return {{"id", std::to_string(decoded.id)},
          {"timestamp_ms", decoded.timestamp_ms},
          {"time", format_iso8601_ms(decoded.timestamp_ms)},
          {"datacenter_id", decoded.datacenter_id},
          {"worker_id", decoded.worker_id},
          {"sequence", decoded.sequence}};
}

}  // namespace snowflake
