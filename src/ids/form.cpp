#include "snowflake/ids/form.hpp"

#include <array>

namespace snowflake {

namespace {

constexpr std::array<std::string_view, kIdFormCount> kNames = {"plain", "opaque", "uuid"};

}  // namespace

std::string_view to_string(IdForm form) noexcept { return kNames[static_cast<std::size_t>(form)]; }

std::optional<IdForm> parse_id_form(std::string_view text) noexcept {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == text) return static_cast<IdForm>(i);
  }
  return std::nullopt;
}

}  // namespace snowflake
