// snowflaked pool status --config FILE [--json]: the recycle pool's worker
// IDs, their owners, heartbeat ages (ZooKeeper's time) and floors.

#include <fmt/format.h>

#include <iostream>

#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/report/pool_status.hpp"

namespace snowflake::commands {

namespace {

int pool_status(const std::string& file, bool json) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  if (config->coordinator.type != CoordinatorType::recycle) {
    return fail(kExitUsage, fmt::format("{}: coordinator.type: pool status needs \"recycle\", "
                                        "this config is \"{}\"",
                                        file, to_string(config->coordinator.type)));
  }
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto status =
      report::read_pool_status(*zk, config->zookeeper.root, config->coordinator.reclaim_after);
  if (!status) return fail(kExitFailure, "cannot read the pool: " + status.error().message);
  if (json) {
    std::cout << report::to_json(status.value()).dump(2) << '\n';
  } else {
    std::cout << report::to_text(status.value());
  }
  return kExitOk;
}

}  // namespace

Parsed pool_status_command(const Options& options) {
  return Action([file = *config_path(options), json = options.count("json") > 0] {
    return pool_status(file, json);
  });
}

}  // namespace snowflake::commands
