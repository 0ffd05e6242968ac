#include "snowflake/commands/common.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/process/logging.hpp"

namespace snowflake::commands {

std::optional<std::string> config_path(const boost::program_options::variables_map& vm) {
  if (!vm.count("config")) return std::nullopt;
  return vm["config"].as<std::string>();
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
