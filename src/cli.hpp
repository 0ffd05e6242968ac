#pragma once
// The command line: which action to take and its arguments. Parsing only;
// main.cpp carries the actions out.

#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/result.hpp"

namespace snowflake {

enum class Action { run, decode, check_config, pool_status, pool_floor, get, help, version };

struct CommandLine {
  Action action = Action::run;
  std::optional<std::string> config_path;
  std::optional<std::string> log_level;
  std::optional<std::string> listen;
  std::string id_text;  // decode
  bool json = false;    // pool status --json, get --json
  // get
  std::string tag = "default";
  std::uint32_t count = 1;
  std::optional<std::string> servers;  // else $SNOWFLAKED_SERVERS, else the default
  std::uint32_t timeout_ms = 5'000;
  bool timeout_given = false;
  // pool floor: one of the two
  std::optional<std::uint64_t> above_id;
  std::optional<std::string> from_leaf;  // a Leaf cluster's root, e.g. /snowflake/leaf
};

// On error: a message for stderr (usage errors exit 2).
Result<CommandLine, std::string> parse_command_line(int argc, const char* const* argv);

std::string usage_text();

}  // namespace snowflake
