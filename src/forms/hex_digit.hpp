#pragma once
// One hex digit's value, or -1: for the key file and UUID text.

namespace snowflake::forms {

inline int hex_digit_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace snowflake::forms
