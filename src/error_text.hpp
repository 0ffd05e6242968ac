#pragma once
// An errno value as text. std::strerror may share one buffer between threads
// (POSIX leaves it unsafe); the standard library's category message is
// thread-safe, and the coordinator, ZooKeeper's and the HTTP threads all
// report errors.

#include <string>
#include <system_error>

namespace snowflake {

inline std::string error_text(int error) { return std::generic_category().message(error); }

}  // namespace snowflake
