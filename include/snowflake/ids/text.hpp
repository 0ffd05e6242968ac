#pragma once
// An ID as text: the one parser for every ID a user types or sends (a route,
// a command's argument or flag, a config key, a floor in a znode), so that
// all of them accept the same text and refuse it in the same words.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace snowflake {

// What an ID's text must be, as the refusals say it.
inline constexpr std::string_view kIdTextForm = "decimal digits, at most 9223372036854775807";

// Plain decimal digits only (no sign, spaces or leading '+'), at most 19 of
// them and at most 2^63-1.
std::optional<std::uint64_t> parse_id(std::string_view text);

// "\"<text>\" is not an ID: expected decimal digits, at most 9223372036854775807"
std::string not_an_id(std::string_view text);

}  // namespace snowflake
