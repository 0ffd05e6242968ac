#pragma once
// What a Meituan Leaf snowflake cluster tells of the IDs it can have issued,
// read from its ZooKeeper nodes as Leaf writes them
// (SnowflakeZookeeperHolder): <root>/forever/<ip:port>-<seq>, each holding
// {"ip": "...", "port": "...", "timestamp": <ms>}, the server's wall clock
// at its last report (every 3 s). A Leaf server issues past its last report
// until the next one, so the newest report + 3 s + a safety margin bounds
// every ID of the cluster, in Leaf's layout (Twitter's epoch, 41 | 10 | 12).

#include <cstdint>
#include <string>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::migration {

// Leaf's report interval: scheduleWithFixedDelay(..., 1L, 3L, SECONDS).
inline constexpr std::int64_t kLeafReportIntervalMs = 3'000;

struct LeafServer {
  std::string node;     // "<ip:port>-<seq>"
  std::string address;  // ip:port from its data
  std::int64_t timestamp_ms = 0;
};

struct LeafCluster {
  std::vector<LeafServer> servers;
  std::int64_t newest_report_ms = 0;
  std::int64_t issued_until_ms = 0;  // newest report + report interval + margin
  std::uint64_t largest_id = 0;      // the largest ID Leaf can have issued by then
};

// Reads <root>/forever. Errors: no such node, no server in it, or a node
// whose data is not Leaf's (its timestamp unknown, no floor can be proven).
Result<LeafCluster, coord::CoordError> read_leaf_cluster(coord::ZkSession& zk,
                                                         const std::string& root,
                                                         std::int64_t margin_ms);

}  // namespace snowflake::migration
