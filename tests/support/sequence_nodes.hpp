#pragma once
// Sequence nodes as `seq create` makes them, for tests that write them
// straight to ZooKeeper.

#include <string>

#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/sequences/period.hpp"

namespace snowflake::test {

// A definition of a sequence that restarts each day in `zone`, from 1, in
// ranges of `step` at least, printed with `printed`.
inline coord::SequenceNode daily_definition(const std::string& zone, const std::string& printed,
                                            std::int64_t step = 10) {
  coord::SequenceNode d{1, step, 0, {}};
  d.reset = PeriodReset::daily;
  d.time_zone = zone;
  d.number_template = printed;
  return d;
}

}  // namespace snowflake::test
