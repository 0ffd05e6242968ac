#pragma once
// The real snowflaked, started for one test on a port the system picks
// (--listen 127.0.0.1:0), found by reading its "listening on" log line.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace snowflake::test {

class Daemon {
 public:
  // Writes `config_json` to a temp dir and starts the daemon with it; waits
  // (with a deadline) until it listens. `listen` may be "[::1]:0".
  explicit Daemon(const std::string& config_json, std::string listen = "127.0.0.1:0",
                  std::map<std::string, std::string> env = {});

  unsigned short port() const { return port_; }
  ChildProcess& process() { return *process_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

}  // namespace snowflake::test
