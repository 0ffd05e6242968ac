#pragma once
// IDs as text: parsing a decimal ID, and a decoded ID as JSON. IDs travel as
// decimal strings in JSON because JavaScript and jq lose precision above 2^53.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

#include "snowflake/id_layout.hpp"

namespace snowflake {

// Plain decimal digits only (no sign, spaces or leading '+'), at most 2^63-1.
std::optional<std::uint64_t> parse_id(std::string_view text);

// {"id":"…","timestamp_ms":…,"time":"<ISO-8601 UTC>","worker_id":…,"sequence":…}
nlohmann::ordered_json decoded_id_to_json(const DecodedId& decoded);

}  // namespace snowflake
