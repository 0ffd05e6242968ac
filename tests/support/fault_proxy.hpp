#pragma once
// A TCP proxy between one daemon and ZooKeeper that a test (or the chaos
// runner) can break on purpose: stall every byte while the connections stay
// open (a network partition: nothing is refused, nothing arrives), add
// delay, reset every connection, or let one request of a given ZooKeeper
// operation reach the server and swallow its reply (a write applied whose
// answer was lost). It runs its own thread on loopback; the daemon connects
// to port() instead of ZooKeeper's.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace snowflake::test {

class FaultProxy {
 public:
  // ZooKeeper's operation codes (the jute protocol's OpCode) worth naming.
  static constexpr int kCreate = 1;
  static constexpr int kSetData = 5;
  static constexpr int kMulti = 14;

  // Listens on a free loopback port and forwards to 127.0.0.1:upstream_port.
  explicit FaultProxy(unsigned short upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  unsigned short port() const { return port_; }
  std::string hosts() const { return "127.0.0.1:" + std::to_string(port_); }

  // Holds every byte in both directions, and every new connection, until
  // heal(). The client sees no error, only silence.
  void stall();
  void heal();
  // Each chunk is forwarded this much later (0: none).
  void set_delay(std::chrono::milliseconds delay);
  // Closes every connection now, with a reset.
  void reset();
  // The next request of operation `op` goes through; the connection that
  // carries it is reset when the server's reply to it arrives, and the reply
  // is dropped. Once. Then, for `outage`, every new connection is reset at
  // once (a blip that lasts: the client cannot read back at once what
  // happened either, and finds out on a later try).
  void lose_next_reply(int op, std::chrono::milliseconds outage = std::chrono::milliseconds(0));
  int replies_lost() const { return replies_lost_.load(); }
  int connections_accepted() const { return accepted_.load(); }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  unsigned short port_ = 0;
  std::atomic<int> replies_lost_{0};
  std::atomic<int> accepted_{0};
};

}  // namespace snowflake::test
