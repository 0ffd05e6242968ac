#pragma once
// What every snowflaked process shares, the daemon and each command: exit
// codes, the one way out for an error, and its config read (the file, the
// layout, ZooKeeper's settings, the state directory).

#include <optional>
#include <string>
#include <string_view>

#include "snowflake/config/config.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a runtime failure: a restart may cure it
inline constexpr int kExitUsage = 2;    // a bad command line or config
// The config conflicts with the cluster (another layout, strategy or
// datacenter than the root's, a root of another system), or a sequential
// cluster's worker IDs are used up: a restart cannot cure it.
inline constexpr int kExitConflict = 3;

// The one way out for a command's errors: prints `text` to stderr (into the
// journal at priority 3, see print_error) and returns `exit_code`.
int fail(int exit_code, std::string_view text);

// The config file at `path`, or the defaults without one. On error prints
// "<file>: <key>: <message>" and returns nullopt (exit 2).
std::optional<Config> load_config(const std::optional<std::string>& path);

// The config's layout (it was validated against the same rules at load).
IdLayout layout_of(const Config& config);

// A layout whose time range has run out decodes IDs but can issue none (the
// uid-generator preset's ran out in 2024): the daemon and check-config
// refuse it; decode takes it. The refusal, naming `source`; nullopt if it
// still lasts.
std::optional<std::string> layout_ended(const Config& config, const std::string& source);

coord::ZkSettings zookeeper_settings(const Config& config);

// The state directory a daemon of this config uses: coordinator.state_dir,
// else systemd's StateDirectory= ($STATE_DIRECTORY), else /var/lib/snowflaked.
std::string state_dir_of(const Config& config);

}  // namespace snowflake
