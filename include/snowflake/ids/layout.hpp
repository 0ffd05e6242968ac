#pragma once
// The bit layout of a snowflake ID. Twitter's order (the default):
//
//    63   62 ............................................................ 0
//   +---+------------------+------------------+-------------+------------+
//   | 0 | time (time_bits) | datacenter (d)   | worker (w)  | seq (s)    |
//   +---+------------------+------------------+-------------+------------+
//
// and sonyflake's, where the sequence sits above the machine:
//
//   | 0 | time (time_bits) | seq (s)          | datacenter (d) | worker (w) |
//
// time = whole time units since the layout's epoch. The datacenter field is
// 0 bits unless configured. Every order keeps time on top, so IDs of one
// generator increase with time, and within a unit with the sequence. The
// sign bit is always 0, so an ID is a positive signed 64-bit integer (SQL
// BIGINT, Java long). The default, 41/10/12 bits with 1 ms units and an
// epoch of 2025-01-01T00:00:00Z, gives 1024 workers x 4096 IDs per ms each
// and lasts until 2094-09-07. An instant past the layout's range is an
// error, never a wrapped or negative ID.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake {

// 2025-01-01T00:00:00Z: recent, so the 41-bit default lasts ~69 years.
inline constexpr std::int64_t kDefaultEpochMs = 1'735'689'600'000;
inline constexpr int kIdBits = 63;

// Where the sequence sits: lowest (Twitter's order) or right below the
// time, above the datacenter and worker (sonyflake's).
enum class FieldOrder : std::uint8_t { sequence_low, sequence_high };

// As the config spells them (layout.order).
inline constexpr std::string_view kOrderSequenceLow = "time,datacenter,worker,sequence";
inline constexpr std::string_view kOrderSequenceHigh = "time,sequence,datacenter,worker";
std::string_view to_string(FieldOrder order) noexcept;
std::optional<FieldOrder> parse_field_order(std::string_view text) noexcept;

struct LayoutSettings {
  int time_bits = 41;
  int datacenter_bits = 0;
  int worker_bits = 10;
  int sequence_bits = 12;
  std::int64_t time_unit_ms = 1;
  std::int64_t epoch_ms = kDefaultEpochMs;
  FieldOrder order = FieldOrder::sequence_low;

  bool operator==(const LayoutSettings&) const = default;
};

// The layouts of other ID systems, by name (layout.preset): each sets every
// layout setting. The README cites each system's source for its row.
struct LayoutPreset {
  std::string_view name;
  LayoutSettings settings;
};
const std::vector<LayoutPreset>& layout_presets();
std::optional<LayoutSettings> find_layout_preset(std::string_view name);

// What is wrong and with which setting: `field` is "time_bits", "epoch", ...,
// or empty when the fault is in the combination (such as the bit sum).
struct LayoutError {
  std::string field;
  std::string message;
};

struct DecodedId {
  std::uint64_t id = 0;
  std::int64_t timestamp_ms = 0;    // start of the ID's time unit, Unix ms
  std::uint32_t datacenter_id = 0;  // 0 in a layout without a datacenter field
  std::uint32_t worker_id = 0;
  std::uint32_t sequence = 0;
};

class IdLayout {
 public:
  // Validates the settings once; `now_ms` (Unix ms) rejects a future epoch.
  static Result<IdLayout, LayoutError> create(const LayoutSettings& settings, std::int64_t now_ms);

  const LayoutSettings& settings() const noexcept { return settings_; }
  std::uint32_t max_datacenter_id() const noexcept { return max_datacenter_; }
  std::uint32_t max_worker_id() const noexcept { return max_worker_; }
  std::uint32_t max_sequence() const noexcept { return max_sequence_; }
  std::int64_t max_time_unit() const noexcept { return max_unit_; }
  // The first instant (Unix ms) this layout can no longer encode.
  std::int64_t end_of_life_ms() const noexcept { return unit_start_ms(max_unit_ + 1); }

  Result<void, LayoutError> check_datacenter_id(std::int64_t datacenter_id) const;
  Result<void, LayoutError> check_worker_id(std::int64_t worker_id) const;

  // Checked: every field must be in range and the instant within the layout.
  // The timestamp is truncated to its time unit.
  Result<std::uint64_t, LayoutError> compose(std::int64_t timestamp_ms, std::int64_t datacenter_id,
                                             std::int64_t worker_id, std::int64_t sequence) const;
  // Rejects only what no layout can produce: the sign bit set.
  Result<DecodedId, LayoutError> decompose(std::uint64_t id) const;

  // The datacenter and worker fields in place: what a generator ORs into
  // every ID it makes. Unchecked (check_*_id first).
  std::uint64_t machine_bits(std::uint32_t datacenter_id, std::uint32_t worker_id) const noexcept {
    return ((static_cast<std::uint64_t>(datacenter_id) << settings_.worker_bits) | worker_id)
           << machine_shift_;
  }
  // Unchecked, for the generator, which keeps every field in range itself.
  std::uint64_t compose_unit(std::int64_t unit, std::uint64_t machine_bits,
                             std::uint32_t sequence) const noexcept {
    return (static_cast<std::uint64_t>(unit) << time_shift_) | machine_bits |
           (static_cast<std::uint64_t>(sequence) << sequence_shift_);
  }
  // What one more sequence adds to an ID: 1 in Twitter's order.
  std::uint64_t sequence_step() const noexcept { return std::uint64_t{1} << sequence_shift_; }

  // Time unit containing `unix_ms` (floor; negative before the epoch).
  std::int64_t unit_of_ms(std::int64_t unix_ms) const noexcept;
  // Unix ms at which time unit `unit` starts.
  std::int64_t unit_start_ms(std::int64_t unit) const noexcept {
    return settings_.epoch_ms + unit * settings_.time_unit_ms;
  }

  // "41/10/12 time/worker/sequence bits, 1 ms unit, epoch ..., end of life ..."
  // (the datacenter and the order too when they are not the default).
  std::string describe() const;

 private:
  explicit IdLayout(const LayoutSettings& settings);

  LayoutSettings settings_;
  int time_shift_;
  int machine_shift_;
  int sequence_shift_;
  std::uint32_t max_datacenter_;
  std::uint32_t max_worker_;
  std::uint32_t max_sequence_;
  std::int64_t max_unit_;
};

}  // namespace snowflake
