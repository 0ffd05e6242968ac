#include "daemon.hpp"

#include <chrono>
#include <stdexcept>

namespace snowflake::test {

Daemon::Daemon(const std::string& config_json, std::string listen,
               std::map<std::string, std::string> env) {
  const auto config = dir_.write("snowflaked.json", config_json);
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{SNOWFLAKED_PATH, "--config", config.string(), "--listen", listen},
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
