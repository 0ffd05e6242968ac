#include "snowflake/ids/json.hpp"

#include <string>

#include "snowflake/base/time_format.hpp"

namespace snowflake {

nlohmann::ordered_json decoded_id_to_json(const DecodedId& decoded) {
  return {{"id", std::to_string(decoded.id)},
          {"timestamp_ms", decoded.timestamp_ms},
          {"time", format_iso8601_ms(decoded.timestamp_ms)},
          {"datacenter_id", decoded.datacenter_id},
          {"worker_id", decoded.worker_id},
          {"sequence", decoded.sequence}};
}

}  // namespace snowflake
