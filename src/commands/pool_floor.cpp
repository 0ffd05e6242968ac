// snowflaked pool floor --config FILE (--above-id N | --from-leaf ROOT):
// raises the cluster's migration floor, then waits until every owner that
// may still issue has confirmed it. Exit 0 means that no daemon of the
// cluster issues an ID at or below the floor from then on.

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "floor_confirmations.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/ids/text.hpp"
#include "snowflake/migration/leaf_import.hpp"
#include "snowflake/migration/raise_floor.hpp"
#include "snowflake/report/floor_report.hpp"

namespace snowflake::commands {

namespace {

struct PoolFloorOptions {
  std::string config_file;
  std::optional<std::uint64_t> above_id;  // one of the two
  std::optional<std::string> from_leaf;   // a Leaf cluster's root, e.g. /snowflake/leaf
  std::optional<std::chrono::milliseconds> timeout;
};

// The largest ID the old system can have issued: given, or read from Leaf's
// tree (and shown with how it follows). nullopt: the error was printed.
std::optional<std::uint64_t> largest_old_id(coord::ZkSession& zk, const PoolFloorOptions& options,
                                            const Config& config) {
  if (options.above_id) return options.above_id;
  const auto margin_ms = config.coordinator.safety_margin.count();
  const auto leaf = migration::read_leaf_cluster(zk, *options.from_leaf, margin_ms);
  if (!leaf) {
    fail(kExitFailure, "cannot read the Leaf cluster: " + leaf.error().message);
    return std::nullopt;
  }
  std::cout << report::to_text(leaf.value(), *options.from_leaf, margin_ms);
  return leaf.value().largest_id;
}

int pool_floor(const PoolFloorOptions& options) {
  const auto config = load_config(options.config_file);
  if (!config) return kExitUsage;
  const auto& co = config->coordinator;
  if (co.type == CoordinatorType::static_id) {
    return fail(kExitUsage, fmt::format("{}: coordinator.type: pool floor needs a ZooKeeper "
                                        "cluster (sequential or recycle); in static mode set "
                                        "coordinator.min_id",
                                        options.config_file));
  }
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const IdLayout layout = layout_of(*config);
  const std::string& root = config->zookeeper.root;
  // The root as a daemon of this config would find it (made if missing, so
  // that a floor can be set before the first daemon starts).
  if (auto checked = coord::check_cluster_root(
          *zk, root, layout.settings(), co.type, co.datacenter_id,
          config->forms.opaque ? config->forms.opaque->fingerprint() : std::string());
      !checked) {
    return fail(kExitFailure, checked.error().message);
  }
  const auto above = largest_old_id(*zk, options, *config);
  if (!above) return kExitFailure;
  const auto raised =
      migration::raise_migration_floor(*zk, root, coord::floor_above(layout, *above));
  if (!raised) return fail(kExitFailure, "cannot set the floor: " + raised.error().message);
  std::cout << report::to_text(raised.value(), root, SystemClock::instance().wall_ms());
  return await_floor_confirmations(
      *zk, *config, raised.value().ms, options.timeout,
      fmt::format("confirmed: no daemon of the cluster issues an ID at or below {}",
                  raised.value().above_id));
}

}  // namespace

Parsed pool_floor_command(const Options& options) {
  PoolFloorOptions o;
  o.config_file = *config_path(options);
  if (options.count("above-id")) {
    const auto text = options["above-id"].as<std::string>();
    o.above_id = parse_id(text);
    if (!o.above_id) return "--above-id: " + not_an_id(text);
  }
  if (options.count("from-leaf")) o.from_leaf = options["from-leaf"].as<std::string>();
  if (o.above_id.has_value() == o.from_leaf.has_value()) {
    return std::string("pool floor takes one of --above-id N and --from-leaf ROOT");
  }
  if (options.count("timeout")) {
    o.timeout = std::chrono::milliseconds(options["timeout"].as<std::uint32_t>());
  }
  return Action([o] { return pool_floor(o); });
}

}  // namespace snowflake::commands
