#pragma once

#include <optional>
#include <string>

namespace snowflake {

// True for the level names the config and --log-level accept.
bool is_log_level(const std::string& name);

// Logs to stderr. Under systemd (JOURNAL_STREAM set) the journal stamps each
// line itself, so the timestamp is left out rather than printed twice.
void configure_logging(const std::string& level);

}  // namespace snowflake
