#include "snowflake/commands/common.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/process/logging.hpp"

namespace snowflake::commands {

int fail(int exit_code, std::string_view text) {
  print_error(text);
  return exit_code;
}

std::optional<std::string> config_path(const boost::program_options::variables_map& vm) {
  if (!vm.count("config")) return std::nullopt;
  return vm["config"].as<std::string>();
}

std::optional<Config> load_config(const std::optional<std::string>& path) {
  const std::int64_t now_ms = SystemClock::instance().wall_ms();
  const ConfigOverrides overrides = overrides_from_environment();
  auto config = path ? load_config_file(*path, now_ms, overrides)
                     : parse_config(nlohmann::json::object(), now_ms, overrides);
  if (!config) {
    fail(kExitUsage, config.error().describe(path.value_or("defaults")));
    return std::nullopt;
  }
  return std::move(config).value();
}

IdLayout layout_of(const Config& config) {
  return IdLayout::create(config.layout, SystemClock::instance().wall_ms()).value();
}

std::optional<std::string> layout_ended(const Config& config, const std::string& source) {
  const IdLayout layout = layout_of(config);
  if (layout.end_of_life_ms() > SystemClock::instance().wall_ms()) return std::nullopt;
  return fmt::format(
      "{}: layout: its time range ended at {} ({}): it can decode IDs "
      "(snowflaked decode), never issue one; a cluster needs a layout that lasts "
      "(a later epoch or more time bits) and a new zookeeper.root",
      source, format_iso8601_ms(layout.end_of_life_ms()), layout.describe());
}

coord::ZkSettings zookeeper_settings(const Config& config) {
  const auto& zk = config.zookeeper;
  return {.hosts = zk.hosts,
          .session_timeout = zk.session_timeout,
          .connect_timeout = zk.connect_timeout,
          .digest_auth = zk.digest_auth.empty() ? std::nullopt : std::optional(zk.digest_auth)};
}

std::string state_dir_of(const Config& c) {
  if (!c.coordinator.state_dir.empty()) return c.coordinator.state_dir;
  // systemd's StateDirectory= (a colon-separated list; ours is the first).
  // Read in main before any thread starts; nothing calls setenv.
  const char* dir = std::getenv("STATE_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
  if (dir && *dir) {
    const std::string dirs = dir;
    return dirs.substr(0, dirs.find(':'));
  }
  return "/var/lib/snowflaked";
}

bool answer_lost(const coord::CoordError& error) {
  return error.zk && (error.zk->code == coord::ZkErrc::connection_loss ||
                      error.zk->code == coord::ZkErrc::operation_timeout);
}

std::unique_ptr<coord::ZkSession> connect_for_command(
    const Config& config, std::optional<std::chrono::milliseconds> wait) {
  configure_logging("warn");
  using Clock = BootClock;
  auto settings = zookeeper_settings(config);
  const auto each = settings.connect_timeout;
  const auto deadline = Clock::now() + std::max(wait.value_or(each), std::chrono::milliseconds(1));
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    settings.connect_timeout = std::clamp(left, std::chrono::milliseconds(1), each);
    auto zk = coord::ZkSession::connect(settings);
    if (zk) return std::move(zk).value();
    if (zk.error().code == coord::ZkErrc::auth_failed) {  // no wait cures that
      fail(kExitFailure, fmt::format("cannot reach ZooKeeper at {}: {}", config.zookeeper.hosts,
                                     zk.error().message()));
      return nullptr;
    }
    // A name that does not resolve yet fails at once: tried again shortly.
    if (Clock::now() + std::chrono::milliseconds(200) >= deadline) {
      fail(kExitFailure, fmt::format("cannot reach ZooKeeper at {}: {}", config.zookeeper.hosts,
                                     zk.error().message()));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace snowflake::commands
