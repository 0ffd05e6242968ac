#pragma once
// A decoded ID as JSON. IDs travel as decimal strings in JSON because
// JavaScript and jq lose precision above 2^53 (parsing one: id_text.hpp).

#include <nlohmann/json.hpp>

#include <cstdint>

#include "snowflake/ids/layout.hpp"

namespace snowflake {

// {"id":"…","timestamp_ms":…,"time":"<ISO-8601 UTC>","worker_id":…,"sequence":…}
nlohmann::ordered_json decoded_id_to_json(const DecodedId& decoded);

}  // namespace snowflake
