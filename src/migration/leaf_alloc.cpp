#include "snowflake/migration/leaf_alloc.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "snowflake/base/names.hpp"

namespace snowflake::migration {

namespace {

constexpr std::int64_t kMaxStep = std::int64_t{1} << 31;

std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = line.find(sep);
    out.push_back(line.substr(0, at));
    if (at == std::string_view::npos) return out;
    line.remove_prefix(at + 1);
  }
}

bool whole(std::string_view text, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= lo && out <= hi;
}

}  // namespace

Result<std::vector<LeafAllocRow>, std::string> parse_leaf_alloc(std::string_view text) {
  std::vector<LeafAllocRow> rows;
  std::set<std::string, std::less<>> seen;
  std::size_t number = 0;
  bool header = false;
  for (std::string_view line : split(text, '\n')) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto fields = split(line, '\t');
    if (!header) {
      if (fields.size() != 3 || fields[0] != "biz_tag" || fields[1] != "max_id" ||
          fields[2] != "step") {
        return fmt::format(
            "line {}: not the header of SELECT biz_tag, max_id, step FROM leaf_alloc "
            "(mysql --batch)",
            number);
      }
      header = true;
      continue;
    }
    if (fields.size() != 3) {
      return fmt::format("line {}: {} fields, not biz_tag, max_id and step", number, fields.size());
    }
    LeafAllocRow row{std::string(fields[0]), 0, 0};
    if (!is_valid_name(row.tag)) {
      return fmt::format("line {}: biz_tag \"{}\" is not [A-Za-z0-9._-]{{1,64}} (or is . or ..)",
                         number, row.tag);
    }
    if (!seen.insert(row.tag).second) {
      return fmt::format("line {}: biz_tag \"{}\" twice", number, row.tag);
    }
    if (!whole(fields[1], 1, INT64_MAX - 1, row.max_id)) {
      return fmt::format("line {}: max_id \"{}\" is not a whole number from 1", number, fields[1]);
    }
    if (!whole(fields[2], 1, kMaxStep, row.step)) {
      return fmt::format("line {}: step \"{}\" is not a whole number from 1 to {}", number,
                         fields[2], kMaxStep);
    }
    rows.push_back(std::move(row));
  }
  if (!header) return std::string("empty: no header line (mysql --batch prints one)");
  return rows;
}

}  // namespace snowflake::migration
