// snowflaked: parses the command line and runs what it asks for; each
// subcommand lives in src/commands/, the daemon's wiring in
// src/process/daemon.cpp.

#include <exception>
#include <string>

#include "snowflake/commands/command_line.hpp"
#include "snowflake/process/program_config.hpp"
#include "snowflake/process/stop_signals.hpp"

int main(int argc, char** argv) {
  using snowflake::fail;
  using snowflake::kExitFailure;
  using snowflake::kExitUsage;
  using snowflake::commands::parse_command_line;
  using snowflake::commands::usage_text;
  // First of all: a SIGTERM from now on waits for the daemon to take it
  // (stop_signals.hpp); the other commands give it back its default action.
  snowflake::block_stop_signals();
  // Whatever escapes (out of memory, a bug): unwind, so that the threads
  // stop and the state file is closed, and say what it was, rather than
  // std::terminate's bare abort.
  try {
    const auto action = parse_command_line(argc, argv);
    if (!action) {
      return fail(kExitUsage, "snowflaked: " + action.error() + "\n\n" + usage_text());
    }
    return action.value()();
  } catch (const std::exception& e) {
    return fail(kExitFailure, std::string("snowflaked: fatal: ") + e.what());
  } catch (...) {
    return fail(kExitFailure, "snowflaked: fatal: an unknown exception");
  }
}
