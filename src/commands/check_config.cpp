// snowflaked check-config FILE: the config as the daemon would load it
// (exit 0 with its mode, ZooKeeper and layout, or exit 2 naming the file and
// the key).

#include <iostream>

#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"

namespace snowflake::commands {

namespace {

int check_config(const std::string& file) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  if (const auto ended = layout_ended(*config, file)) return fail(kExitUsage, *ended);
  // The mode first: scripts/run.sh starts a ZooKeeper only for a mode that uses one.
  std::cout << file << ": OK (" << to_string(config->coordinator.type);
  if (config->coordinator.type != CoordinatorType::static_id)
    std::cout << " via ZooKeeper " << config->zookeeper.hosts << " at " << config->zookeeper.root;
  std::cout << "; " << layout_of(*config).describe() << ")\n";
  return kExitOk;
}

}  // namespace

Parsed check_config_command(const Options& options, const Arguments& args) {
  auto file = config_path(options);
  if (args.size() > 1 || (args.empty() && !file)) {
    return std::string("check-config takes exactly one FILE");
  }
  if (!args.empty()) file = args[0];
  return Action([file = *file] { return check_config(file); });
}

}  // namespace snowflake::commands
