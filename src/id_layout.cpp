#include "snowflake/id_layout.hpp"

#include <fmt/format.h>

#include <limits>

#include "snowflake/time_format.hpp"

namespace snowflake {

namespace {

// Worker and sequence are uint32_t; 31 bits keeps "max + 1" (a unit's
// capacity) representable too.
constexpr int kMaxFieldBits = 31;
// Longer units than a day make no sense for IDs and risk overflow below.
constexpr std::int64_t kMaxTimeUnitMs = 86'400'000;

LayoutError error(std::string field, std::string message) {
  return LayoutError{std::move(field), std::move(message)};
}

}  // namespace

Result<IdLayout, LayoutError> IdLayout::create(const LayoutSettings& s, std::int64_t now_ms) {
  // Each field: at least one bit; worker and sequence fit 32-bit values.
  const struct {
    const char* name;
    int bits;
    int max;
  } fields[] = {{"time_bits", s.time_bits, kIdBits - 2},
                {"worker_bits", s.worker_bits, kMaxFieldBits},
                {"sequence_bits", s.sequence_bits, kMaxFieldBits}};
  for (const auto& f : fields) {
    if (f.bits < 1 || f.bits > f.max) {
      return error(f.name, fmt::format("must be an integer from 1 to {}, got {}", f.max, f.bits));
    }
  }
  const int sum = s.time_bits + s.worker_bits + s.sequence_bits;
  if (sum != kIdBits) {
    return error("", fmt::format("time_bits + worker_bits + sequence_bits must be {} (the sign "
                                 "bit stays 0), got {} + {} + {} = {}",
                                 kIdBits, s.time_bits, s.worker_bits, s.sequence_bits, sum));
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
      time_shift_(settings.worker_bits + settings.sequence_bits),
      max_worker_(static_cast<std::uint32_t>((std::uint64_t{1} << settings.worker_bits) - 1)),
      max_sequence_(static_cast<std::uint32_t>((std::uint64_t{1} << settings.sequence_bits) - 1)),
      max_unit_(static_cast<std::int64_t>((std::uint64_t{1} << settings.time_bits) - 1)) {}

Result<void, LayoutError> IdLayout::check_worker_id(std::int64_t worker_id) const {
  if (worker_id < 0 || worker_id > max_worker_) {
    return error("worker_id", fmt::format("worker ID {} is out of range 0..{} ({} worker bits)",
                                          worker_id, max_worker_, settings_.worker_bits));
  }
  return outcome::success();
}

Result<std::uint64_t, LayoutError> IdLayout::compose(std::int64_t timestamp_ms,
                                                     std::int64_t worker_id,
                                                     std::int64_t sequence) const {
  BOOST_OUTCOME_TRY(check_worker_id(worker_id));
  if (sequence < 0 || sequence > max_sequence_) {
    return error("sequence", fmt::format("sequence {} is out of range 0..{}", sequence,
                                         max_sequence_));
  }
  if (timestamp_ms < settings_.epoch_ms) {
    return error("timestamp", fmt::format("{} is before the layout's epoch {}",
                                          format_iso8601_ms(timestamp_ms),
                                          format_iso8601_ms(settings_.epoch_ms)));
  }
  const std::int64_t unit = unit_of_ms(timestamp_ms);
  if (unit > max_unit_) {
    return error("timestamp", fmt::format("{} is past the layout's end of life {}",
                                          format_iso8601_ms(timestamp_ms),
                                          format_iso8601_ms(end_of_life_ms())));
  }
  return compose_unit(unit, static_cast<std::uint32_t>(worker_id),
                      static_cast<std::uint32_t>(sequence));
}

Result<DecodedId, LayoutError> IdLayout::decompose(std::uint64_t id) const {
  if (id >> kIdBits != 0) {
    return error("id", fmt::format("{} has the sign bit set; no snowflake ID does", id));
  }
  DecodedId out;
  out.id = id;
  out.sequence = static_cast<std::uint32_t>(id & max_sequence_);
  out.worker_id = static_cast<std::uint32_t>((id >> settings_.sequence_bits) & max_worker_);
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
  return fmt::format("{}/{}/{} time/worker/sequence bits, {} ms unit, epoch {}, end of life {}",
                     settings_.time_bits, settings_.worker_bits, settings_.sequence_bits,
                     settings_.time_unit_ms, format_iso8601_ms(settings_.epoch_ms),
                     format_iso8601_ms(end_of_life_ms()));
}

}  // namespace snowflake
