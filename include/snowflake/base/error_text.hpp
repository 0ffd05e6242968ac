#pragma once
// An errno value as text, from any thread. POSIX does not make std::strerror
// thread-safe (glibc since 2.32 does, other C libraries may not), and
// std::generic_category().message() calls strerror in libstdc++; GNU
// strerror_r writes into the caller's buffer or returns a static string.

#include <string.h>  // NOLINT(modernize-deprecated-headers): strerror_r is POSIX, not <cstring>

#include <string>

namespace snowflake {

inline std::string error_text(int error) {
  char buffer[256];
  return ::strerror_r(error, buffer, sizeof buffer);  // the GNU form (C++ defines _GNU_SOURCE)
}

}  // namespace snowflake
