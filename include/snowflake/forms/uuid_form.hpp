#pragma once
// The UUID form of an ID (RFC 9562, version 7): the ID's time in
// unix_ts_ms, then, in rand_a and rand_b, the ID's sequence, datacenter and
// worker bits, most significant first, and random bits in the rest:
//
//    0                   1                   2                   3
//   |           unix_ts_ms (48: the start of the ID's time unit)     |
//   | ver=7 | sequence, datacenter, worker ... | var=10 | ... | random |
//
// The sequence right after the time is the RFC's method 1 (a counter in
// rand_a): one daemon's UUIDs increase within a millisecond. Time, sequence,
// datacenter and worker are the whole ID, so two daemons never make the same
// UUID, and a UUID decodes back to its ID. It shows the time the ID was
// issued, and the worker: a UUID is not a secret.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake::forms {

// Random bits for the rest (rand_b's tail): at most 74 are used.
struct UuidRandom {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
};
// From OpenSSL's CSPRNG (RAND_bytes), read ahead in blocks per thread.
UuidRandom uuid_random();

// Whether every ID of the layout has a UUID: its times, in Unix ms, fit
// unix_ts_ms (48 bits) and are not before 1970. The error says why not.
Result<void, std::string> check_uuid_layout(const IdLayout& layout);

// Appends the ID's UUID, 36 characters, lower-case hex with dashes. The
// layout must pass check_uuid_layout; the ID must be one of the layout's.
void append_uuid(std::string& out, std::uint64_t id, const IdLayout& layout,
                 const UuidRandom& random);

// The ID a UUID of the layout came from: 36 characters (hex, either case)
// with version 7 and variant 10, whose fields are a valid ID of the layout.
Result<std::uint64_t, std::string> id_of_uuid(std::string_view text, const IdLayout& layout);

// Looks like a UUID (8-4-4-4-12 hex digits): /decode tells the forms apart.
bool looks_like_uuid(std::string_view text) noexcept;

}  // namespace snowflake::forms
