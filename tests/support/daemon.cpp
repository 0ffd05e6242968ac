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

namespace {

bool uses_zookeeper(const nlohmann::json& config, const std::map<std::string, std::string>& env) {
  const auto type = env.find("SNOWFLAKED_COORDINATOR_TYPE");
  const std::string t = type != env.end()
                            ? type->second
                            : config.value("/coordinator/type"_json_pointer, std::string("static"));
  return t == "recycle" || t == "sequential";
}

}  // namespace

void create_cluster(const std::string& config_json, const std::map<std::string, std::string>& env) {
  TempDir dir;
  const auto config = write_daemon_config(dir, config_json);
  // --wait: ZooKeeper just started, or a loaded machine (a TSan build beside
  // other work), may take longer than the config's connect timeout.
  ChildProcess create(
      {snowflaked_binary(), "cluster", "create", "--config", config.string(), "--wait", "20000"},
      env);
  const auto status = create.wait_for_exit(std::chrono::seconds(30));
  if (!status || status->code != 0) {
    throw std::runtime_error("snowflaked cluster create failed:\n" + create.stderr_text());
  }
}

Daemon::Daemon(const std::string& config_json, std::string listen,
               std::map<std::string, std::string> env, Genesis genesis)
    : config_(write_daemon_config(dir_, config_json)) {
  const auto config = nlohmann::json::parse(config_json);
  state_dir_ =
      config.value("/coordinator/state_dir"_json_pointer, (dir_.path() / "state").string());
  if (genesis == Genesis::vouched && uses_zookeeper(config, env)) {
    // Its exit code is the daemon's business: a config the cluster refuses
    // (another layout, a Leaf root) is refused by the daemon too, which the
    // test asks about; a cluster that exists is left as it is.
    ChildProcess create({snowflaked_binary(), "cluster", "create", "--config", config_.string()},
                        env);
    if (!create.wait_for_exit(std::chrono::seconds(30))) {
      throw std::runtime_error("snowflaked cluster create did not finish:\n" +
                               create.stderr_text());
    }
  }
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
