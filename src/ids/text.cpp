#include "snowflake/ids/text.hpp"

#include <fmt/format.h>

#include <charconv>

#include "snowflake/ids/layout.hpp"

namespace snowflake {

std::optional<std::uint64_t> parse_id(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc{} || end != text.data() + text.size() || id >> kIdBits != 0) {
    return std::nullopt;
  }
  return id;
}

std::string not_an_id(std::string_view text) {
  return fmt::format("\"{}\" is not an ID: expected {}", text, kIdTextForm);
}

}  // namespace snowflake
