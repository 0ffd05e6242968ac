#pragma once
// What the subcommands share: exit codes, the one way out for an error, the
// config a command is given, and a ZooKeeper session for operator commands.

#include <boost/program_options/variables_map.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::commands {

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

// --config FILE, if given.
std::optional<std::string> config_path(const boost::program_options::variables_map& vm);

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

// A session for an operator command (pool status, pool floor), with the
// ZooKeeper client's chatter kept out of the report. On failure prints why
// and returns nullptr (exit 1).
// `wait`: keep trying this long (ZooKeeper not up yet, its names not yet
// resolvable), instead of zookeeper.connect_timeout_ms once.
std::unique_ptr<coord::ZkSession> connect_for_command(
    const Config& config, std::optional<std::chrono::milliseconds> wait = std::nullopt);

// Whether ZooKeeper's answer was lost rather than given: the connection
// dropped (a server that failed, an ensemble electing a leader) or the call
// timed out. The session lives on and finds another server; asked again,
// the command gets an answer.
bool answer_lost(const coord::CoordError& error);

// A step of an operator command, tried again while its answer is lost, up
// to `deadline` (the command's --wait). Only for steps that may run twice:
// reads, and writes that read first and are conditional (a fence written
// twice is one fence, a frozen sequence frozen again is unchanged).
template <class Step>
auto until_answered(BootClock::time_point deadline, Step step) -> decltype(step()) {
  for (;;) {
    auto result = step();
    if (result || !answer_lost(result.error()) || BootClock::now() >= deadline) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace snowflake::commands
