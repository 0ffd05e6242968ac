#pragma once
// The daemon: the parts of the core library wired together in their start-up
// and shutdown order (docs/design.md, "Start-up and shutdown").

#include <optional>
#include <string>

namespace snowflake {

struct DaemonOptions {
  std::optional<std::string> config_file;  // none: the built-in defaults
  std::optional<std::string> log_level;    // overrides the config's
  std::optional<std::string> listen;       // overrides http.listen
};

// Runs until SIGTERM or SIGINT (exit 0) or a fatal coordination error (exit
// 1); a bad config or flag is exit 2, naming the key.
int run_daemon(const DaemonOptions& options);

}  // namespace snowflake
