#include "zookeeper_server.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace snowflake::test {

namespace net = boost::asio;
using namespace std::chrono_literals;

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
                    net::async_write(s, net::buffer(command), [&](boost::system::error_code wec,
                                                                  std::size_t) {
                      if (wec) return;
                      // The server closes after answering: read to the end.
                      net::async_read(s, net::dynamic_buffer(answer),
                                      [](boost::system::error_code, std::size_t) {});
                    });
                  });
  ioc.run_for(2s);
  return answer;
}

ZooKeeperServer::ZooKeeperServer() : port_(free_port()) {
  std::filesystem::create_directories(dir_.path() / "data");
  std::ofstream(dir_.path() / "zoo.cfg")
      << "tickTime=100\n"
      << "initLimit=10\nsyncLimit=5\n"
      << "dataDir=" << (dir_.path() / "data").string() << "\n"
      << "clientPort=" << port_ << "\n"
      << "clientPortAddress=127.0.0.1\n"
      << "admin.enableServer=false\n"  // it would take port 8080
      << "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
      << "minSessionTimeout=200\nmaxSessionTimeout=60000\n";
  start();
}

ZooKeeperServer::~ZooKeeperServer() { stop(); }

void ZooKeeperServer::start() {
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      "/usr/bin/java", "-Xmx256m", "-cp",
      "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
      "org.apache.zookeeper.server.quorum.QuorumPeerMain", (dir_.path() / "zoo.cfg").string()});
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

void ZooKeeperServer::pause() { process_->send_signal(SIGSTOP); }
void ZooKeeperServer::resume() { process_->send_signal(SIGCONT); }

}  // namespace snowflake::test
