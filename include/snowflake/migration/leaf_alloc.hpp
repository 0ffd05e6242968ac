#pragma once
// Meituan Leaf's segment table, as `mysql --batch -e 'SELECT biz_tag,
// max_id, step FROM leaf_alloc'` prints it: a header line, then one line per
// tag, tab-separated. Leaf takes a segment with `UPDATE leaf_alloc SET
// max_id = max_id + step` and hands out [max_id - step, max_id): every
// number it has handed out is below the row's max_id.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake::migration {

struct LeafAllocRow {
  std::string tag;          // biz_tag
  std::int64_t max_id = 0;  // the first number Leaf never handed out
  std::int64_t step = 0;
  bool operator==(const LeafAllocRow&) const = default;
};

// Every row, or the first problem ("line N: ..."): a missing or other
// header, a tag that is not [A-Za-z0-9._-]{1,64}, a tag twice, max_id or
// step not a whole number in range (max_id >= 1, 1 <= step <= 2^31).
Result<std::vector<LeafAllocRow>, std::string> parse_leaf_alloc(std::string_view text);

}  // namespace snowflake::migration
