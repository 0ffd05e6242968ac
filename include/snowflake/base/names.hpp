#pragma once

#include <cstddef>
#include <string_view>

namespace snowflake {

inline constexpr std::size_t kMaxNameLength = 64;

// Service names and ID tags: [A-Za-z0-9._-]{1,64}, but not "." or "..".
// Safe as a URL path segment, a ZooKeeper node name (ZooKeeper refuses "."
// and "..": they are paths' relative steps) and a metrics label value as
// they are.
constexpr bool is_valid_name(std::string_view s) noexcept {
  if (s.empty() || s.size() > kMaxNameLength || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace snowflake
