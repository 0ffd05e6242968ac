#pragma once
// A real standalone ZooKeeper (Debian's `zookeeper` package) for one test: a
// free loopback port, a temp data dir, a short tick so sessions can expire
// fast. Stopped (by pid) when the object goes.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::test {

class ZooKeeperServer {
 public:
  // `log_dir`: keep the server's output there (a chaos run's record).
  // `env`: the server's environment beside ours (a wall clock of its own:
  // wall_clock.hpp).
  explicit ZooKeeperServer(std::filesystem::path log_dir = {},
                           std::map<std::string, std::string> env = {});
  ~ZooKeeperServer();

  unsigned short port() const { return port_; }
  std::string hosts() const { return "127.0.0.1:" + std::to_string(port_); }
  // The server's pid while it runs, else -1.
  pid_t pid() const { return process_ ? process_->pid() : -1; }

  // Kill and start again on the same port and data (sessions survive).
  void restart();
  void stop();
  // Starts it again after stop(); waits until it answers.
  void start();
  // SIGSTOP / SIGCONT: the server hangs without closing connections.
  void pause();
  void resume();

  // ZooKeeper losing what it acknowledged, as operators meet it: the server
  // killed and started again on the same port with an empty data directory
  // (a pod on an emptyDir, a replaced disk).
  void wipe();
  // A backup of the data directory as it is now (the server stopped for the
  // copy and started again), kept until the server goes.
  std::filesystem::path back_up();
  // The server killed, its data replaced by a backup, started again: a
  // restore of last night's copy. `while_down` runs before the start (the
  // runbook's command, started before ZooKeeper is back).
  void restore(const std::filesystem::path& backup, const std::function<void()>& while_down = {});

 private:
  std::filesystem::path data_dir() const { return dir_.path() / "data"; }

  TempDir dir_;
  int backups_ = 0;
  std::filesystem::path log_dir_;
  std::map<std::string, std::string> env_;
  int starts_ = 0;
  unsigned short port_;
  std::unique_ptr<ChildProcess> process_;
};

// A 3-server ensemble on loopback (server.N lines, myid files), each with
// its own data dir. Servers can be killed one by one.
class ZooKeeperEnsemble {
 public:
  // `env`: as ZooKeeperServer's, for every member.
  explicit ZooKeeperEnsemble(std::filesystem::path log_dir = {},
                             std::map<std::string, std::string> env = {});
  ~ZooKeeperEnsemble();

  std::string hosts() const;  // all three client addresses
  int size() const { return static_cast<int>(members_.size()); }
  unsigned short client_port(int index) const;
  // The index of the server that is leader now, or -1.
  int leader() const;
  void kill(int index);
  // Starts a killed member again on its ports and data (it rejoins).
  void start(int index);
  // As ZooKeeperServer's, for the whole ensemble: every member killed, its
  // data emptied (its myid kept) or replaced by a backup, all started again.
  void wipe();
  std::filesystem::path back_up();
  void restore(const std::filesystem::path& backup, const std::function<void()>& while_down = {});
  void pause(int index);
  void resume(int index);

 private:
  struct Member {
    unsigned short client_port;
    unsigned short peer_port;
    unsigned short election_port;
    std::filesystem::path config;
    std::unique_ptr<ChildProcess> process;
    int starts = 0;
  };
  std::filesystem::path data_dir(int index) const {
    return dir_.path() / ("data" + std::to_string(index + 1));
  }
  void kill_all();
  void start_all();  // and waits until each serves

  TempDir dir_;
  std::filesystem::path log_dir_;
  std::map<std::string, std::string> env_;
  std::vector<Member> members_;
  int backups_ = 0;
};

// A session on `hosts` for a test's own use (a 10 s connect deadline);
// throws, failing the test, if none can be had.
std::unique_ptr<coord::ZkSession> connect_session(
    const std::string& hosts, std::optional<std::string> digest_auth = std::nullopt,
    std::chrono::milliseconds session_timeout = std::chrono::milliseconds(4000));
// The same, to a server this test started.
inline std::unique_ptr<coord::ZkSession> connect(
    const ZooKeeperServer& zk, std::optional<std::string> digest_auth = std::nullopt,
    std::chrono::milliseconds session_timeout = std::chrono::milliseconds(4000)) {
  return connect_session(zk.hosts(), std::move(digest_auth), session_timeout);
}

// Sends a four-letter command ("ruok", "srvr") and returns the answer ("" if none).
std::string zookeeper_command(unsigned short port, const std::string& command);

// A loopback TCP port nobody listens on right now.
unsigned short free_port();

}  // namespace snowflake::test
