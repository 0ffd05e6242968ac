#pragma once
// ISO-8601 UTC timestamps with millisecond precision, as used in config files,
// logs and decoded IDs: "2025-01-01T00:00:00.000Z".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace snowflake {

// Formats milliseconds since the Unix epoch, e.g. "2025-01-01T00:00:00.000Z".
std::string format_iso8601_ms(std::int64_t unix_ms);

// Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" (UTC only: an offset would be a second
// way to write the same instant, and epochs are compared bit for bit).
std::optional<std::int64_t> parse_iso8601_ms(std::string_view text);

}  // namespace snowflake
