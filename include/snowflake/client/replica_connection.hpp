#pragma once
// One keep-alive HTTP/1.1 connection from `snowflaked get` to one replica,
// made on first use and again after it broke; over TLS for an https:// URL. Every call finishes by
// its deadline: each step (name lookup, connect, write, read) runs on the caller's io_context until
// it completes or the deadline passes, when it is cancelled.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <memory>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/result.hpp"
#include "snowflake/client/client_tls.hpp"
#include "snowflake/client/replica_url.hpp"

namespace snowflake::client {

struct Answer {
  unsigned status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;  // a 503's Retry-After
};

class ReplicaConnection {
 public:
  using Deadline = BootClock::time_point;

  // `tls`: the context of an https:// URL (client_tls.hpp); null for http://.
  ReplicaConnection(boost::asio::io_context& io, ReplicaUrl url,
                    std::shared_ptr<boost::asio::ssl::context> tls = nullptr);

  const ReplicaUrl& url() const { return url_; }
  // GET `target`. On error: why there is no answer ("connection refused",
  // "timed out"), for the message that names each replica's last error.
  Result<Answer, std::string> get(std::string_view target, Deadline deadline);

 private:
  Result<Answer, std::string> exchange(std::string_view target, Deadline deadline);
  std::optional<std::string> connect(Deadline deadline);
  std::optional<std::string> handshake(Deadline deadline);
  bool connected() const { return socket_.has_value() || tls_stream_.has_value(); }
  void disconnect();
  boost::asio::ip::tcp::socket& socket() {
    return tls_stream_ ? tls_stream_->next_layer() : *socket_;
  }

  boost::asio::io_context& io_;
  ReplicaUrl url_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  // Open while kept alive: one or the other, as the URL says.
  std::optional<boost::asio::ip::tcp::socket> socket_;
  std::optional<TlsStream> tls_stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace snowflake::client
