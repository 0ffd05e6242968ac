#include "snowflake/ids/layout.hpp"

#include <fmt/format.h>

#include <limits>

#include "snowflake/base/time_format.hpp"

namespace snowflake {

namespace {

// Datacenter, worker and sequence are uint32_t; 31 bits keeps "max + 1" (a
// unit's capacity) representable too.
constexpr int kMaxFieldBits = 31;
// Longer units than a day make no sense for IDs and risk overflow below.
constexpr std::int64_t kMaxTimeUnitMs = 86'400'000;

LayoutError error(std::string field, std::string message) {
  return LayoutError{std::move(field), std::move(message)};
}

}  // namespace

std::string_view to_string(FieldOrder order) noexcept {
  return order == FieldOrder::sequence_high ? kOrderSequenceHigh : kOrderSequenceLow;
}

std::optional<FieldOrder> parse_field_order(std::string_view text) noexcept {
  if (text == kOrderSequenceLow) return FieldOrder::sequence_low;
  if (text == kOrderSequenceHigh) return FieldOrder::sequence_high;
  return std::nullopt;
}

const std::vector<LayoutPreset>& layout_presets() {
  // Each row is checked against that system's own source (docs/migration.md,
  // "Layouts of other systems", cites each).
  static const std::vector<LayoutPreset> presets = {
      // twitter-archive/snowflake IdWorker.scala: twepoch 1288834974657,
      // 5 datacenter, 5 worker, 12 sequence bits.
      {"twitter", {41, 5, 5, 12, 1, 1'288'834'974'657, FieldOrder::sequence_low}},
      // Meituan Leaf SnowflakeIDGenImpl.java: Twitter's epoch, 10 worker and
      // 12 sequence bits.
      {"leaf", {41, 0, 10, 12, 1, 1'288'834'974'657, FieldOrder::sequence_low}},
      // sony/sonyflake sonyflake.go: 39 bits of 10 ms since
      // 2014-09-01T00:00:00Z, 8 sequence bits above 16 machine bits.
      {"sonyflake", {39, 0, 16, 8, 10, 1'409'529'600'000, FieldOrder::sequence_high}},
      // Apache ShardingSphere SnowflakeKeyGenerateAlgorithm.java: 10 worker
      // and 12 sequence bits since 2016-11-01 00:00 in the JVM's time zone:
      // UTC here.
      {"shardingsphere", {41, 0, 10, 12, 1, 1'477'958'400'000, FieldOrder::sequence_low}},
      // baidu/uid-generator DefaultUidGenerator.java: 28 bits of seconds, 22
      // worker, 13 sequence bits; epochSeconds 1463673600 (2016-05-20 00:00
      // at UTC+8). Its time ran out on 2024-11-20T13:24:16Z.
      {"uid-generator", {28, 0, 22, 13, 1000, 1'463'673'600'000, FieldOrder::sequence_low}},
  };
  return presets;
}

std::optional<LayoutSettings> find_layout_preset(std::string_view name) {
  for (const auto& p : layout_presets()) {
    if (p.name == name) return p.settings;
  }
  return std::nullopt;
}

Result<IdLayout, LayoutError> IdLayout::create(const LayoutSettings& s, std::int64_t now_ms) {
  // Time, worker and sequence: at least one bit; datacenter: none by
  // default. Datacenter, worker and sequence fit 32-bit values.
  const struct {
    const char* name;
    int bits;
    int min;
    int max;
  } fields[] = {{"time_bits", s.time_bits, 1, kIdBits - 2},
                {"datacenter_bits", s.datacenter_bits, 0, kMaxFieldBits},
                {"worker_bits", s.worker_bits, 1, kMaxFieldBits},
                {"sequence_bits", s.sequence_bits, 1, kMaxFieldBits}};
  for (const auto& f : fields) {
    if (f.bits < f.min || f.bits > f.max) {
      return error(f.name,
                   fmt::format("must be an integer from {} to {}, got {}", f.min, f.max, f.bits));
    }
  }
  const int sum = s.time_bits + s.datacenter_bits + s.worker_bits + s.sequence_bits;
  if (sum != kIdBits) {
    return error("", fmt::format("time_bits + datacenter_bits + worker_bits + sequence_bits must "
                                 "be {} (the sign bit stays 0), got {} + {} + {} + {} = {}",
                                 kIdBits, s.time_bits, s.datacenter_bits, s.worker_bits,
                                 s.sequence_bits, sum));
  }
  if (s.time_unit_ms < 1 || s.time_unit_ms > kMaxTimeUnitMs) {
    return error("time_unit_ms", fmt::format("must be from 1 to {} (one day), got {}",
                                             kMaxTimeUnitMs, s.time_unit_ms));
  }
  if (s.epoch_ms < 0) {
    return error("epoch", fmt::format("must not be before 1970-01-01T00:00:00Z, got {}",
                                      format_iso8601_ms(s.epoch_ms)));
  }
  if (s.epoch_ms > now_ms) {
    return error("epoch", fmt::format("must not be in the future: {} is after now ({})",
                                      format_iso8601_ms(s.epoch_ms), format_iso8601_ms(now_ms)));
  }
  // The end of life, epoch + 2^time_bits units, must be a representable
  // instant; only absurd layouts (e.g. 61 time bits of one-day units) fail.
  std::int64_t span = 0, end = 0;
  if (__builtin_mul_overflow(std::int64_t{1} << s.time_bits, s.time_unit_ms, &span) ||
      __builtin_add_overflow(span, s.epoch_ms, &end)) {
    return error("time_bits", fmt::format("{} bits of {} ms units overflow 64-bit milliseconds; "
                                          "use fewer time bits or a shorter unit",
                                          s.time_bits, s.time_unit_ms));
  }
  return IdLayout(s);
}

IdLayout::IdLayout(const LayoutSettings& settings)
    : settings_(settings),
      time_shift_(settings.datacenter_bits + settings.worker_bits + settings.sequence_bits),
      machine_shift_(settings.order == FieldOrder::sequence_low ? settings.sequence_bits : 0),
      sequence_shift_(settings.order == FieldOrder::sequence_low
                          ? 0
                          : settings.datacenter_bits + settings.worker_bits),
      max_datacenter_(
          static_cast<std::uint32_t>((std::uint64_t{1} << settings.datacenter_bits) - 1)),
      max_worker_(static_cast<std::uint32_t>((std::uint64_t{1} << settings.worker_bits) - 1)),
      max_sequence_(static_cast<std::uint32_t>((std::uint64_t{1} << settings.sequence_bits) - 1)),
      max_unit_(static_cast<std::int64_t>((std::uint64_t{1} << settings.time_bits) - 1)) {}

Result<void, LayoutError> IdLayout::check_datacenter_id(std::int64_t datacenter_id) const {
  if (datacenter_id < 0 || datacenter_id > max_datacenter_) {
    if (settings_.datacenter_bits == 0) {
      return error("datacenter_id", fmt::format("datacenter ID {}: the layout has no datacenter "
                                                "field (datacenter_bits 0)",
                                                datacenter_id));
    }
    return error("datacenter_id",
                 fmt::format("datacenter ID {} is out of range 0..{} ({} "
                             "datacenter bits)",
                             datacenter_id, max_datacenter_, settings_.datacenter_bits));
  }
  return outcome::success();
}

Result<void, LayoutError> IdLayout::check_worker_id(std::int64_t worker_id) const {
  if (worker_id < 0 || worker_id > max_worker_) {
    return error("worker_id", fmt::format("worker ID {} is out of range 0..{} ({} worker bits)",
                                          worker_id, max_worker_, settings_.worker_bits));
  }
  return outcome::success();
}

Result<std::uint64_t, LayoutError> IdLayout::compose(std::int64_t timestamp_ms,
                                                     std::int64_t datacenter_id,
                                                     std::int64_t worker_id,
                                                     std::int64_t sequence) const {
  BOOST_OUTCOME_TRY(check_datacenter_id(datacenter_id));
  BOOST_OUTCOME_TRY(check_worker_id(worker_id));
  if (sequence < 0 || sequence > max_sequence_) {
    return error("sequence",
                 fmt::format("sequence {} is out of range 0..{}", sequence, max_sequence_));
  }
  if (timestamp_ms < settings_.epoch_ms) {
    return error("timestamp",
                 fmt::format("{} is before the layout's epoch {}", format_iso8601_ms(timestamp_ms),
                             format_iso8601_ms(settings_.epoch_ms)));
  }
  const std::int64_t unit = unit_of_ms(timestamp_ms);
  if (unit > max_unit_) {
    return error("timestamp",
                 fmt::format("{} is past the layout's end of life {}",
                             format_iso8601_ms(timestamp_ms), format_iso8601_ms(end_of_life_ms())));
  }
  return compose_unit(unit,
                      machine_bits(static_cast<std::uint32_t>(datacenter_id),
                                   static_cast<std::uint32_t>(worker_id)),
                      static_cast<std::uint32_t>(sequence));
}

Result<DecodedId, LayoutError> IdLayout::decompose(std::uint64_t id) const {
  if (id >> kIdBits != 0) {
    return error("id", fmt::format("{} has the sign bit set; no snowflake ID does", id));
  }
  DecodedId out;
  out.id = id;
  out.sequence = static_cast<std::uint32_t>((id >> sequence_shift_) & max_sequence_);
  const std::uint64_t machine = id >> machine_shift_;
  out.worker_id = static_cast<std::uint32_t>(machine & max_worker_);
  out.datacenter_id =
      static_cast<std::uint32_t>((machine >> settings_.worker_bits) & max_datacenter_);
  out.timestamp_ms = unit_start_ms(static_cast<std::int64_t>(id >> time_shift_));
  return out;
}

std::int64_t IdLayout::unit_of_ms(std::int64_t unix_ms) const noexcept {
  const std::int64_t since = unix_ms - settings_.epoch_ms;
  const std::int64_t unit = settings_.time_unit_ms;
  const std::int64_t q = since / unit;
  return (since % unit != 0 && since < 0) ? q - 1 : q;
}

std::string IdLayout::describe() const {
  const auto& s = settings_;
  std::string bits =
      s.datacenter_bits == 0
          ? fmt::format("{}/{}/{} time/worker/sequence bits", s.time_bits, s.worker_bits,
                        s.sequence_bits)
          : fmt::format("{}/{}/{}/{} time/datacenter/worker/sequence bits", s.time_bits,
                        s.datacenter_bits, s.worker_bits, s.sequence_bits);
  if (s.order != FieldOrder::sequence_low) bits += fmt::format(" (order {})", to_string(s.order));
  return fmt::format("{}, {} ms unit, epoch {}, end of life {}", bits, s.time_unit_ms,
                     format_iso8601_ms(s.epoch_ms), format_iso8601_ms(end_of_life_ms()));
}

}  // namespace snowflake
