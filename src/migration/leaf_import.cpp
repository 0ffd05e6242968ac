#include "snowflake/migration/leaf_import.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::migration {

using coord::CoordErrc;
using coord::CoordError;
using coord::ZkErrc;
using coord::ZkSession;
namespace tree = coord::tree;

Result<LeafCluster, CoordError> read_leaf_cluster(ZkSession& zk, const std::string& root,
                                                  std::int64_t margin_ms) {
  const std::string forever = tree::forever_dir(root);
  BOOST_OUTCOME_TRY(names, zk.try_children(forever));
  if (!names) {
    return CoordError{CoordErrc::zookeeper,
                      fmt::format("{} does not exist: no Leaf snowflake cluster at {} (its root "
                                  "is /snowflake/<leaf.name>)",
                                  forever, root)};
  }
  LeafCluster cluster;
  for (const auto& name : names.value()) {
    BOOST_OUTCOME_TRY(node, zk.get(tree::child(forever, name)));
    const auto j = nlohmann::json::parse(node.data, nullptr, false);
    const auto ts = j.is_object() && j.contains("timestamp")
                        ? json_integer<std::int64_t>(j.at("timestamp"))
                        : std::nullopt;
    if (!ts) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("{}/{} holds \"{}\", not a Leaf server's report: the last time "
                                    "it issued is unknown, so no floor can be proven",
                                    forever, name, node.data)};
    }
    const auto text = [&](const char* key) {
      return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>()
                                                      : std::string("?");
    };
    cluster.servers.push_back({name, text("ip") + ":" + text("port"), *ts});
    cluster.newest_report_ms = std::max(cluster.newest_report_ms, *ts);
  }
  if (cluster.servers.empty()) {
    return CoordError{CoordErrc::zookeeper, fmt::format("{} has no Leaf server under it", forever)};
  }
  cluster.issued_until_ms = cluster.newest_report_ms + kLeafReportIntervalMs + margin_ms;
  // Leaf's layout: (ms - twepoch) << 22 | workerId << 12 | sequence.
  const auto leaf = IdLayout::create(*find_layout_preset("leaf"), cluster.issued_until_ms).value();
  const auto largest =
      leaf.compose(cluster.issued_until_ms, 0, leaf.max_worker_id(), leaf.max_sequence());
  if (!largest) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("Leaf's layout cannot hold {}: {}", cluster.issued_until_ms,
                                  largest.error().message)};
  }
  cluster.largest_id = largest.value();
  return cluster;
}

}  // namespace snowflake::migration
