// snowflaked [--config FILE] [--listen ADDR] [--log-level LEVEL]: the
// daemon (its wiring: ../daemon.cpp).

#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/process/daemon.hpp"

namespace snowflake::commands {

Parsed run_command(const Options& options) {
  DaemonOptions o;
  o.config_file = config_path(options);
  if (options.count("log-level")) o.log_level = options["log-level"].as<std::string>();
  if (options.count("listen")) o.listen = options["listen"].as<std::string>();
  return Action([o] { return run_daemon(o); });
}

}  // namespace snowflake::commands
