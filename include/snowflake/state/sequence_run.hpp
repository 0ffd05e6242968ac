#pragma once
// <state_dir>/sequence-run: the instance token of the run that last served
// sequences from this state directory. The next run holds the directory's
// lock, so that run is over: it deletes that run's holder node
// (coord/sequence_holders.hpp), which would otherwise hold up `seq raise`.

#include <optional>
#include <string>

#include "snowflake/result.hpp"

namespace snowflake::state {

// The run named there before (nullopt: none), and `run` written in its place.
Result<std::optional<std::string>, std::string> swap_sequence_run(const std::string& dir,
                                                                  const std::string& run);

}  // namespace snowflake::state
