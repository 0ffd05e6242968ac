#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace snowflake {

// True for the level names the config and --log-level accept.
bool is_log_level(const std::string& name);

// True when stderr is the journal stream systemd gave us (JOURNAL_STREAM
// names its device and inode).
bool stderr_is_journal();

// Logs to stderr. Into the journal, each line starts with its syslog
// priority ("<4>") and carries no timestamp: journald stamps and ranks lines
// itself, so nothing is printed twice. Elsewhere: UTC timestamp and level.
void configure_logging(const std::string& level);

// Prints what stops the daemon before logging is configured (a bad config
// or flag: exit 2) or after it gave up (a fatal exception) to stderr. Into
// the journal each line carries priority 3 ("<3>"), so `journalctl -p err`
// shows the one message an operator needs; plain text elsewhere.
void print_error(std::string_view text);

}  // namespace snowflake
