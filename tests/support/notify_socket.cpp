#include "notify_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace snowflake::test {

NotifySocket::NotifySocket() : path_(dir_.path() / "notify.sock") {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path_.string().size() >= sizeof address.sun_path)
    throw std::runtime_error("socket path too long");
  std::strcpy(address.sun_path, path_.c_str());
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd_);
    throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
  }
}

NotifySocket::~NotifySocket() { ::close(fd_); }

std::optional<std::string> NotifySocket::receive(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  std::vector<char> buffer(64 * 1024);
  const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
  if (n < 0) return std::nullopt;
  return std::string(buffer.data(), static_cast<std::size_t>(n));
}

}  // namespace snowflake::test
