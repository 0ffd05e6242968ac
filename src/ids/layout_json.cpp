#include "snowflake/ids/layout_json.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "snowflake/base/json_integer.hpp"

namespace snowflake {

using nlohmann::json;

std::string encode_layout(const LayoutSettings& l) {
  json j{{"time_bits", l.time_bits},
         {"worker_bits", l.worker_bits},
         {"sequence_bits", l.sequence_bits},
         {"time_unit_ms", l.time_unit_ms},
         {"epoch_ms", l.epoch_ms}};
  // Written only when used, so a default layout reads the same to daemons
  // from before these settings. A 0.2 daemon cannot match a datacenter
  // layout (its bits would not sum to 63), but it could match a sonyflake
  // order by the widths alone: there the sequence is an object it cannot
  // read, so it refuses the root instead of issuing in another order.
  if (l.datacenter_bits != 0) j["datacenter_bits"] = l.datacenter_bits;
  if (l.order == FieldOrder::sequence_high) {
    j["sequence_bits"] = json{{"bits", l.sequence_bits}, {"position", "high"}};
  }
  return j.dump();
}

std::optional<LayoutSettings> decode_layout(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    LayoutSettings l;
    l.time_bits = json_integer_at<int>(j, "time_bits");
    l.datacenter_bits =
        j.contains("datacenter_bits") ? json_integer_at<int>(j, "datacenter_bits") : 0;
    l.worker_bits = json_integer_at<int>(j, "worker_bits");
    if (const json& seq = j.at("sequence_bits"); seq.is_object()) {
      if (seq.at("position") != "high") return std::nullopt;
      l.sequence_bits = json_integer_at<int>(seq, "bits");
      l.order = FieldOrder::sequence_high;
    } else {
      l.sequence_bits = json_integer_at<int>(j, "sequence_bits");
    }
    l.time_unit_ms = json_integer_at<std::int64_t>(j, "time_unit_ms");
    l.epoch_ms = json_integer_at<std::int64_t>(j, "epoch_ms");
    return l;
  } catch (const json::exception&) {
    return std::nullopt;
  } catch (const std::out_of_range&) {  // from json_integer_at()
    return std::nullopt;
  }
}

}  // namespace snowflake
