#pragma once
// The command line: which action to take and its arguments. Parsing only;
// main.cpp carries the actions out.

#include <optional>
#include <string>

#include "snowflake/result.hpp"

namespace snowflake {

enum class Action { run, decode, check_config, pool_status, help, version };

struct CommandLine {
  Action action = Action::run;
  std::optional<std::string> config_path;
  std::optional<std::string> log_level;
  std::optional<std::string> listen;
  std::string id_text;  // decode
  bool json = false;     // pool status --json
};

// On error: a message for stderr (usage errors exit 2).
Result<CommandLine, std::string> parse_command_line(int argc, const char* const* argv);

std::string usage_text();

}  // namespace snowflake
