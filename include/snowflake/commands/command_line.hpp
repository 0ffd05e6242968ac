#pragma once
// The command line: which subcommand, with which options. Parsing only; each
// subcommand's file reads its own options and carries its action out.

#include <string>

#include "snowflake/commands/commands.hpp"

namespace snowflake::commands {

// The action the command line asks for; on error, a message for stderr (a
// usage error: exit 2).
Parsed parse_command_line(int argc, const char* const* argv);

std::string usage_text();

}  // namespace snowflake::commands
