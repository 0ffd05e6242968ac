#include "zookeeper_server.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace snowflake::test {

namespace net = boost::asio;
using namespace std::chrono_literals;

std::unique_ptr<coord::ZkSession> connect_session(const std::string& hosts,
                                                  std::optional<std::string> digest_auth,
                                                  std::chrono::milliseconds session_timeout) {
  auto s = coord::ZkSession::connect({.hosts = hosts,
                                      .session_timeout = session_timeout,
                                      .connect_timeout = 10s,
                                      .digest_auth = std::move(digest_auth)});
  if (!s) throw std::runtime_error("cannot connect to ZooKeeper: " + s.error().message());
  return std::move(s).value();
}

unsigned short free_port() {
  net::io_context ioc;
  net::ip::tcp::acceptor a(ioc, net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

std::string zookeeper_command(unsigned short port, const std::string& command) {
  // Async with a deadline: a server still starting may accept and not answer.
  net::io_context ioc;
  net::ip::tcp::socket s(ioc);
  std::string answer;
  s.async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port),
                  [&](boost::system::error_code ec) {
                    if (ec) return;
                    net::async_write(
                        s, net::buffer(command), [&](boost::system::error_code wec, std::size_t) {
                          if (wec) return;
                          // The server closes after answering: read to the end.
                          net::async_read(s, net::dynamic_buffer(answer),
                                          [](boost::system::error_code, std::size_t) {});
                        });
                  });
  ioc.run_for(2s);
  return answer;
}

namespace {

// Output into `log_dir`/<name>-<start> if a log dir is given.
std::unique_ptr<ChildProcess> start_server(const std::filesystem::path& config,
                                           const std::filesystem::path& log_dir,
                                           const std::string& name, int start,
                                           const std::map<std::string, std::string>& env = {}) {
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/java", "-Xmx256m", "-cp",
                               "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
                               "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                               config.string()},
      env, log_dir.empty() ? log_dir : log_dir / (name + "-" + std::to_string(start)));
}

void write_common(std::ostream& out, const std::filesystem::path& data, unsigned short port) {
  out << "tickTime=100\n"
      << "initLimit=20\nsyncLimit=10\n"
      << "dataDir=" << data.string() << "\n"
      << "clientPort=" << port << "\n"
      << "clientPortAddress=127.0.0.1\n"
      << "admin.enableServer=false\n"  // it would take port 8080
      << "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
      << "minSessionTimeout=200\nmaxSessionTimeout=60000\n";
}

}  // namespace

namespace {

// Everything in `dir` but the files named in `keep`.
void empty_directory(const std::filesystem::path& dir, const std::vector<std::string>& keep = {}) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    std::filesystem::remove_all(entry.path());
  }
}

}  // namespace

ZooKeeperEnsemble::ZooKeeperEnsemble(std::filesystem::path log_dir,
                                     std::map<std::string, std::string> env)
    : log_dir_(std::move(log_dir)), env_(std::move(env)) {
  for (int i = 0; i < 3; ++i)
    members_.push_back({free_port(), free_port(), free_port(), {}, nullptr});
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const auto data = dir_.path() / ("data" + std::to_string(i + 1));
    std::filesystem::create_directories(data);
    std::ofstream(data / "myid") << i + 1 << "\n";
    const auto config = dir_.path() / ("zoo" + std::to_string(i + 1) + ".cfg");
    std::ofstream out(config);
    write_common(out, data, members_[i].client_port);
    for (std::size_t j = 0; j < members_.size(); ++j) {
      out << "server." << j + 1 << "=127.0.0.1:" << members_[j].peer_port << ":"
          << members_[j].election_port << "\n";
    }
    out.close();
    members_[i].config = config;
    members_[i].process =
        start_server(config, log_dir_, "zk" + std::to_string(i), members_[i].starts++, env_);
  }
  start_all();
}

void ZooKeeperEnsemble::kill_all() {
  for (std::size_t i = 0; i < members_.size(); ++i) kill(static_cast<int>(i));
}

void ZooKeeperEnsemble::start_all() {
  for (std::size_t i = 0; i < members_.size(); ++i) start(static_cast<int>(i));
  // Up once every member serves (a member answers only within a quorum).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (const auto& m : members_) {
    while (zookeeper_command(m.client_port, "srvr").find("Mode:") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("ZooKeeper ensemble did not start:\n" + m.process->stderr_text());
      }
      std::this_thread::sleep_for(50ms);
    }
  }
}

void ZooKeeperEnsemble::wipe() {
  kill_all();
  for (std::size_t i = 0; i < members_.size(); ++i)
    empty_directory(data_dir(static_cast<int>(i)), {"myid"});
  start_all();
}

std::filesystem::path ZooKeeperEnsemble::back_up() {
  const auto backup = dir_.path() / ("backup" + std::to_string(++backups_));
  kill_all();
  for (std::size_t i = 0; i < members_.size(); ++i) {
    copy_directory(data_dir(static_cast<int>(i)), backup / std::to_string(i));
  }
  start_all();
  return backup;
}

void ZooKeeperEnsemble::restore(const std::filesystem::path& backup,
                                const std::function<void()>& while_down) {
  kill_all();
  for (std::size_t i = 0; i < members_.size(); ++i) {
    empty_directory(data_dir(static_cast<int>(i)));
    copy_directory(backup / std::to_string(i), data_dir(static_cast<int>(i)));
  }
  if (while_down) while_down();
  start_all();
}

ZooKeeperEnsemble::~ZooKeeperEnsemble() {
  for (std::size_t i = 0; i < members_.size(); ++i) kill(static_cast<int>(i));
}

std::string ZooKeeperEnsemble::hosts() const {
  std::string out;
  for (const auto& m : members_) {
    if (!out.empty()) out += ",";
    out += "127.0.0.1:" + std::to_string(m.client_port);
  }
  return out;
}

int ZooKeeperEnsemble::leader() const {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].process &&
        zookeeper_command(members_[i].client_port, "srvr").find("Mode: leader") !=
            std::string::npos) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

unsigned short ZooKeeperEnsemble::client_port(int index) const {
  return members_[static_cast<std::size_t>(index)].client_port;
}

void ZooKeeperEnsemble::start(int index) {
  auto& m = members_[static_cast<std::size_t>(index)];
  if (m.process) return;
  m.process = start_server(m.config, log_dir_, "zk" + std::to_string(index), m.starts++, env_);
}

void ZooKeeperEnsemble::pause(int index) {
  if (auto& p = members_[static_cast<std::size_t>(index)].process) p->send_signal(SIGSTOP);
}

void ZooKeeperEnsemble::resume(int index) {
  if (auto& p = members_[static_cast<std::size_t>(index)].process) p->send_signal(SIGCONT);
}

void ZooKeeperEnsemble::kill(int index) {
  auto& m = members_[static_cast<std::size_t>(index)];
  if (!m.process) return;
  m.process->send_signal(SIGCONT);  // in case it was paused
  m.process->send_signal(SIGKILL);
  m.process->wait_for_exit(10s);
  m.process.reset();
}

ZooKeeperServer::ZooKeeperServer(std::filesystem::path log_dir,
                                 std::map<std::string, std::string> env)
    : log_dir_(std::move(log_dir)), env_(std::move(env)), port_(free_port()) {
  std::filesystem::create_directories(dir_.path() / "data");
  {
    std::ofstream config(dir_.path() / "zoo.cfg");
    write_common(config, dir_.path() / "data", port_);
  }
  start();
}

ZooKeeperServer::~ZooKeeperServer() { stop(); }

void ZooKeeperServer::start() {
  if (process_) return;
  process_ = start_server(dir_.path() / "zoo.cfg", log_dir_, "zk", starts_++, env_);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (zookeeper_command(port_, "ruok") != "imok") {
    if (!process_->running() || std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("ZooKeeper did not start:\n" + process_->stderr_text());
    }
    std::this_thread::sleep_for(20ms);
  }
}

void ZooKeeperServer::stop() {
  if (!process_) return;
  process_->send_signal(SIGCONT);  // in case it was paused
  process_->send_signal(SIGKILL);
  process_->wait_for_exit(10s);
  process_.reset();
}

void ZooKeeperServer::restart() {
  stop();
  start();
}

void ZooKeeperServer::wipe() {
  stop();
  empty_directory(data_dir());
  start();
}

std::filesystem::path ZooKeeperServer::back_up() {
  const auto backup = dir_.path() / ("backup" + std::to_string(++backups_));
  stop();
  copy_directory(data_dir(), backup);
  start();
  return backup;
}

void ZooKeeperServer::restore(const std::filesystem::path& backup,
                              const std::function<void()>& while_down) {
  stop();
  empty_directory(data_dir());
  copy_directory(backup, data_dir());
  if (while_down) while_down();
  start();
}

void ZooKeeperServer::pause() {
  if (process_) process_->send_signal(SIGSTOP);
}
void ZooKeeperServer::resume() {
  if (process_) process_->send_signal(SIGCONT);
}

}  // namespace snowflake::test
