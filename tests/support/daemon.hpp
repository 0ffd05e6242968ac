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

// How a daemon of a ZooKeeper mode finds its cluster's root.
enum class Genesis {
  // As the documented first start does (docs/operations.md):
  // `snowflaked cluster create` first, which vouches that a cluster the
  // test's fresh ZooKeeper does not hold yet is new (else the daemon fences
  // it for a lease: a ZooKeeper that lost its data looks new too).
  vouched,
  // The daemon alone: a root it makes is fenced (the tests of a wiped or
  // restored ZooKeeper).
  as_found,
};

class Daemon {
 public:
  // Writes `config_json` to a temp dir and starts the daemon with it; waits
  // (with a deadline) until it listens. `listen` may be "[::1]:0". A config
  // without coordinator.state_dir gets a fresh one in that temp dir: daemons
  // of parallel tests never share one (the second would exit).
  explicit Daemon(const std::string& config_json, std::string listen = "127.0.0.1:0",
                  std::map<std::string, std::string> env = {}, Genesis genesis = Genesis::vouched);

  unsigned short port() const { return port_; }
  ChildProcess& process() { return *process_; }
  const ChildProcess& process() const { return *process_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  const std::filesystem::path& config_path() const { return config_; }
  const std::filesystem::path& state_dir() const { return state_dir_; }

 private:
  TempDir dir_;
  std::filesystem::path config_;
  std::filesystem::path state_dir_;
  std::unique_ptr<ChildProcess> process_;
  unsigned short port_ = 0;
};

// `snowflaked cluster create` with the config: vouches that the cluster is
// new, as Genesis::vouched does, for a test that starts its daemon after
// ZooKeeper stops answering. Fails the test if the command fails.
void create_cluster(const std::string& config_json,
                    const std::map<std::string, std::string>& env = {});

// Writes the config as Daemon does (with a state_dir of its own if it names
// none) into `dir` and returns its path: for a daemon a test starts itself.
// The snowflaked binary of this build tree.
const std::string& snowflaked_binary();

std::filesystem::path write_daemon_config(const TempDir& dir, const std::string& config_json);

}  // namespace snowflake::test
