#pragma once
// An ID layout as JSON: how the cluster root and the state file record the
// layout their IDs were issued in.
//
//   {"time_bits": 41, "worker_bits": 10, "sequence_bits": 12,
//    "time_unit_ms": 1, "epoch_ms": 1288834974657}
//
// plus "datacenter_bits" when there are any, and "sequence_bits" as
// {"bits": N, "position": "high"} for a sequence above the time.

#include <optional>
#include <string>
#include <string_view>

#include "snowflake/ids/layout.hpp"

namespace snowflake {

std::string encode_layout(const LayoutSettings& layout);
// nullopt: not a layout's JSON (any key missing, of another type or out of range).
std::optional<LayoutSettings> decode_layout(std::string_view text);

}  // namespace snowflake
