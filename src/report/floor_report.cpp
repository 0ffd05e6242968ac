#include "snowflake/report/floor_report.hpp"

#include <fmt/format.h>

#include "snowflake/base/time_format.hpp"

namespace snowflake::report {

using coord::MigrationFloor;
using migration::kLeafReportIntervalMs;
using migration::LeafCluster;
using migration::UnconfirmedOwner;

std::string to_text(const LeafCluster& leaf, const std::string& root, std::int64_t margin_ms) {
  std::string out = fmt::format("Leaf cluster {}: {} server(s)\n", root, leaf.servers.size());
  for (const auto& s : leaf.servers) {
    out += fmt::format("  {:<32} {:<21} last report {}\n", s.node, s.address,
                       format_iso8601_ms(s.timestamp_ms));
  }
  out += fmt::format(
      "newest report {} + Leaf's report interval {} ms + safety_margin_ms {} = {}: "
      "the largest ID Leaf can have issued is {}\n",
      format_iso8601_ms(leaf.newest_report_ms), kLeafReportIntervalMs, margin_ms,
      format_iso8601_ms(leaf.issued_until_ms), leaf.largest_id);
  return out;
}

std::string to_text(const MigrationFloor& floor, const std::string& root, std::int64_t now_ms) {
  std::string out = fmt::format("floor of {}: no ID at or below {}; IDs resume after {}\n", root,
                                floor.above_id, format_iso8601_ms(floor.ms));
  if (floor.ms > now_ms) {
    out += fmt::format(
        "note: that is {:.1f} s ahead of this machine's clock: until then daemons "
        "refuse with 503 floor_ahead (IDs of another layout can decode far "
        "ahead: does this cluster use the old system's layout?)\n",
        static_cast<double>(floor.ms - now_ms) / 1000);
  }
  return out;
}

std::string to_text(const std::vector<UnconfirmedOwner>& pending,
                    std::chrono::milliseconds patience) {
  std::string out = fmt::format(
      "not confirmed within {} ms (the floor is set, and daemons honour it "
      "as they learn it; these may not have yet):",
      patience.count());
  for (const auto& o : pending) {
    out += fmt::format("\n  worker ID {}: {}: {}", o.worker_id, o.owner, o.why);
  }
  return out;
}

}  // namespace snowflake::report
