#include "daemon.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>

namespace snowflake::test {

std::filesystem::path write_daemon_config(const TempDir& dir, const std::string& config_json) {
  nlohmann::json config = nlohmann::json::parse(config_json);
  if (!config["coordinator"].contains("state_dir")) {
    config["coordinator"]["state_dir"] = (dir.path() / "state").string();
  }
  return dir.write("snowflaked.json", config.dump(2));
}

const std::string& snowflaked_binary() {
  static const std::string path = SNOWFLAKED_PATH;
  return path;
}

Daemon::Daemon(const std::string& config_json, std::string listen,
               std::map<std::string, std::string> env)
    : config_(write_daemon_config(dir_, config_json)) {
  state_dir_ = nlohmann::json::parse(config_json)
                   .value("/coordinator/state_dir"_json_pointer, (dir_.path() / "state").string());
  process_ =
      std::make_unique<ChildProcess>(std::vector<std::string>{snowflaked_binary(), "--config",
                                                              config_.string(), "--listen", listen},
                                     std::move(env));
  const std::string marker = "listening on ";
  if (!process_->wait_for_stderr(marker, std::chrono::seconds(20))) {
    throw std::runtime_error("snowflaked did not start listening:\n" + process_->stderr_text());
  }
  // "... listening on 127.0.0.1:41234 with ..." or "... on [::1]:41234 with ..."
  const std::string log = process_->stderr_text();
  const auto at = log.find(marker) + marker.size();
  const auto end = log.find(' ', at);
  const auto colon = log.rfind(':', end);
  port_ = static_cast<unsigned short>(std::stoi(log.substr(colon + 1, end - colon - 1)));
}

}  // namespace snowflake::test
