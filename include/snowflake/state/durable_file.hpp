#pragma once
// A small file in the state directory, replaced whole or not at all, and
// still there after a power cut: a temp file, fsync, rename, fsync of the
// directory.

#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"

namespace snowflake::state {

// Writes `text` as `path` (mode 0600) in `dir`. Errors name the file.
Result<void, std::string> write_durably(const std::string& dir, const std::string& path,
                                        std::string_view text);

}  // namespace snowflake::state
