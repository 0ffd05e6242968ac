#include "snowflake/forms/uuid_form.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <stdexcept>

#include "hex_digit.hpp"

namespace snowflake::forms {

namespace {

__extension__ typedef unsigned __int128 u128;  // GCC and Clang's, as -Wpedantic wants it said

constexpr int kPayloadBits = 74;  // rand_a (12) + rand_b (62)
constexpr int kRandBBits = 62;
constexpr std::int64_t kMaxUnixMs = (std::int64_t{1} << 48) - 1;
constexpr std::size_t kTextLength = 36;

int fields_bits(const LayoutSettings& s) {
  return s.sequence_bits + s.datacenter_bits + s.worker_bits;
}

u128 low_bits(int n) { return n >= 128 ? ~u128{0} : (u128{1} << n) - 1; }

bool is_dash_at(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

}  // namespace

UuidRandom uuid_random() {
  // RAND_bytes per UUID would cost more than the rest of it: 4 KiB at a time.
  thread_local std::array<std::uint64_t, 512> pool{};
  thread_local std::size_t next = pool.size();
  if (next + 2 > pool.size()) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(pool.data()), static_cast<int>(sizeof(pool))) !=
        1) {
      throw std::runtime_error("UUID: OpenSSL's RAND_bytes failed");
    }
    next = 0;
  }
  const UuidRandom r{pool[next], pool[next + 1]};
  next += 2;
  return r;
}

Result<void, std::string> check_uuid_layout(const IdLayout& layout) {
  if (fields_bits(layout.settings()) > kPayloadBits) {
    return fmt::format("its sequence, datacenter and worker bits ({}) exceed a UUIDv7's {}",
                       fields_bits(layout.settings()), kPayloadBits);
  }
  if (layout.settings().epoch_ms < 0 || layout.end_of_life_ms() - 1 > kMaxUnixMs) {
    return std::string("its times do not all fit a UUIDv7's 48 bits of milliseconds since 1970");
  }
  return outcome::success();
}

void append_uuid(std::string& out, std::uint64_t id, const IdLayout& layout,
                 const UuidRandom& random) {
  const DecodedId d = layout.decompose(id).value();
  const LayoutSettings& s = layout.settings();
  const int used = fields_bits(s);
  u128 payload = d.sequence;
  payload = (payload << s.datacenter_bits) | d.datacenter_id;
  payload = (payload << s.worker_bits) | d.worker_id;
  const u128 rand = (u128{random.high} << 64) | random.low;
  payload = (payload << (kPayloadBits - used)) | (rand & low_bits(kPayloadBits - used));
  const std::uint64_t hi = (static_cast<std::uint64_t>(d.timestamp_ms) << 16) | (0x7u << 12) |
                           static_cast<std::uint64_t>(payload >> kRandBBits);
  const std::uint64_t lo =
      (std::uint64_t{0b10} << 62) | static_cast<std::uint64_t>(payload & low_bits(kRandBBits));
  // 32 hex digits, dashes after the 8th, 12th, 16th and 20th: written here
  // rather than formatted (a format string costs more than the rest).
  constexpr std::string_view kHex = "0123456789abcdef";
  char text[kTextLength];
  std::size_t at = 0;
  for (int nibble = 0; nibble < 32; ++nibble) {
    if (is_dash_at(at)) text[at++] = '-';
    const std::uint64_t word = nibble < 16 ? hi : lo;
    text[at++] = kHex[(word >> (60 - 4 * (nibble % 16))) & 0xf];
  }
  out.append(text, kTextLength);
}

bool looks_like_uuid(std::string_view text) noexcept {
  if (text.size() != kTextLength) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (is_dash_at(i) ? text[i] != '-' : hex_digit_value(text[i]) < 0) return false;
  }
  return true;
}

Result<std::uint64_t, std::string> id_of_uuid(std::string_view text, const IdLayout& layout) {
  if (!looks_like_uuid(text)) {
    return std::string("a UUID is 36 characters: 8-4-4-4-12 hex digits with dashes");
  }
  u128 value = 0;
  for (const char c : text) {
    if (c != '-') value = (value << 4) | static_cast<unsigned>(hex_digit_value(c));
  }
  const auto hi = static_cast<std::uint64_t>(value >> 64);
  const auto lo = static_cast<std::uint64_t>(value);
  if (((hi >> 12) & 0xf) != 7 || (lo >> 62) != 0b10) {
    return std::string("not a version 7 UUID of RFC 9562 (version digit 7, variant 8 to b)");
  }
  const LayoutSettings& s = layout.settings();
  const auto unix_ms = static_cast<std::int64_t>(hi >> 16);
  const u128 payload = (u128{hi & 0xfff} << kRandBBits) | (lo & low_bits(kRandBBits));
  const int used = fields_bits(s);
  const u128 fields = payload >> (kPayloadBits - used);
  const auto worker = static_cast<std::int64_t>(fields & low_bits(s.worker_bits));
  const auto datacenter =
      static_cast<std::int64_t>((fields >> s.worker_bits) & low_bits(s.datacenter_bits));
  const auto sequence = static_cast<std::int64_t>(fields >> (s.worker_bits + s.datacenter_bits));
  // Ours start a time unit: anything else is another system's UUID.
  if (unix_ms < s.epoch_ms || (unix_ms - s.epoch_ms) % s.time_unit_ms != 0) {
    return std::string("its time is not the start of a time unit of this layout: not one of ours");
  }
  auto id = layout.compose(unix_ms, datacenter, worker, sequence);
  if (!id) return "its fields are no ID of this layout: " + id.error().message;
  return id.value();
}

}  // namespace snowflake::forms
