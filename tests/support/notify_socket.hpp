#pragma once
// The receiving end of sd_notify(3) for tests: a Unix datagram socket bound
// in a temp dir, as systemd's NOTIFY_SOCKET. Each datagram is one message
// ("READY=1\nSTATUS=...").

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "child_process.hpp"

namespace snowflake::test {

class NotifySocket {
 public:
  NotifySocket();
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The value for NOTIFY_SOCKET.
  std::string path() const { return path_.string(); }
  // The next message, or nullopt if none arrives within `timeout`.
  std::optional<std::string> receive(std::chrono::milliseconds timeout);

 private:
  TempDir dir_;
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace snowflake::test
