#pragma once
// The raise of `seq raise` (seq_raise.cpp), shared with `seq import`: the
// tag's floor raised to `above`, then a wait of up to `patience` for every
// daemon run that may still hand out a number <= above to say it dropped
// them. Prints what it did; the exit code: 0 confirmed, 1 not (each run
// named), 2 no such sequence.

#include <chrono>
#include <cstdint>
#include <string>

#include "snowflake/zk/zk_session.hpp"

namespace snowflake::commands {

inline constexpr std::chrono::milliseconds kDefaultRaisePatience{10000};

int raise_and_confirm(coord::ZkSession& zk, const std::string& root, const std::string& tag,
                      std::int64_t above, std::chrono::milliseconds patience);

}  // namespace snowflake::commands
