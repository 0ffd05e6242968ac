#pragma once
// One keep-alive HTTP/1.1 connection from `snowflaked get` to one replica,
// made on first use and again after it broke. Every call finishes by its
// deadline: each step (name lookup, connect, write, read) runs on the
// caller's io_context until it completes or the deadline passes, when it is
// cancelled.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "replica_url.hpp"
#include "snowflake/result.hpp"

namespace snowflake::client {

struct Answer {
  unsigned status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;  // a 503's Retry-After
};

class ReplicaConnection {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  ReplicaConnection(boost::asio::io_context& io, ReplicaUrl url);

  const ReplicaUrl& url() const { return url_; }
  // GET `target`. On error: why there is no answer ("connection refused",
  // "timed out"), for the message that names each replica's last error.
  Result<Answer, std::string> get(std::string_view target, Deadline deadline);

 private:
  Result<Answer, std::string> exchange(std::string_view target, Deadline deadline);
  std::optional<std::string> connect(Deadline deadline);

  boost::asio::io_context& io_;
  ReplicaUrl url_;
  std::optional<boost::asio::ip::tcp::socket> socket_;  // open while kept alive
  boost::beast::flat_buffer buffer_;
};

}  // namespace snowflake::client
