#include "snowflake/process/program_config.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/process/logging.hpp"

namespace snowflake {

int fail(int exit_code, std::string_view text) {
  print_error(text);
  return exit_code;
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

}  // namespace snowflake
