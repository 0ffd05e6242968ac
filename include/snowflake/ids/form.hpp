#pragma once
// The forms an issued ID is handed out in (GET /id/<tag>?form=...):
//   plain   the ID itself: time-ordered, and it shows its time, worker and
//           per-millisecond count (/decode reads them)
//   opaque  a keyed permutation of it (FF1, forms/opaque_ids.hpp): as unique,
//           a 63-bit number too, and without the key it reveals nothing
//   uuid    an RFC 9562 version 7 UUID made of it (forms/uuid_form.hpp): for
//           databases that want UUIDs; it shows the time like the ID does

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace snowflake {

enum class IdForm : std::uint8_t { plain, opaque, uuid };
inline constexpr std::size_t kIdFormCount = 3;

std::string_view to_string(IdForm form) noexcept;
std::optional<IdForm> parse_id_form(std::string_view text) noexcept;

}  // namespace snowflake
