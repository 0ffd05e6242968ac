#include "snowflake/client/replica_connection.hpp"

#include "snowflake/base/tls_peer.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <charconv>
#include <cstdint>

#include "snowflake/base/clock.hpp"
#include "snowflake/version.hpp"

namespace snowflake::client {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

// The largest answer taken: 1,000,000 IDs (the most http.max_batch allows)
// as JSON strings.
constexpr std::uint64_t kMaxBody = 64ULL << 20;

// Starts one operation with a handler and runs the context until it has
// completed or the deadline has passed; then `cancel` makes it complete
// (with operation_aborted) and the result is a timeout.
template <typename Start, typename Cancel>
error_code run_until(net::io_context& io, ReplicaConnection::Deadline deadline, Start start,
                     Cancel cancel) {
  std::optional<error_code> result;
  start([&result](error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run_until(deadline);
  if (result) return *result;
  cancel();
  io.restart();
  io.run();
  return beast::error::timeout;
}

std::string describe(const error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  if (ec == net::error::connection_refused) return "connection refused";
  return ec.message();
}

std::optional<std::chrono::seconds> retry_after(std::string_view value) {
  unsigned seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) return std::nullopt;
  return std::chrono::seconds(seconds);
}

}  // namespace

ReplicaConnection::ReplicaConnection(net::io_context& io, ReplicaUrl url,
                                     std::shared_ptr<net::ssl::context> tls)
    : io_(io), url_(std::move(url)), tls_(std::move(tls)) {}

void ReplicaConnection::disconnect() {
  // Closed without close_notify: a client that leaves needs no answer, and
  // the replica takes a close between requests as the end of keep-alive.
  socket_.reset();
  tls_stream_.reset();
}

Result<Answer, std::string> ReplicaConnection::get(std::string_view target, Deadline deadline) {
  const bool reused = connected();
  auto answer = exchange(target, deadline);
  // A kept-alive connection may have been closed by the replica meanwhile
  // (its idle timeout): one try on a new one. Asking again is safe: IDs of
  // an answer that never arrived are simply never used.
  if (!answer && reused && BootClock::now() < deadline) {
    answer = exchange(target, deadline);
  }
  return answer;
}

std::optional<std::string> ReplicaConnection::connect(Deadline deadline) {
  tcp::resolver resolver(io_);
  tcp::resolver::results_type endpoints;
  error_code ec = run_until(
      io_, deadline,
      [&](auto handler) {
        resolver.async_resolve(
            url_.host, url_.port,
            [&endpoints, handler](error_code e, tcp::resolver::results_type r) mutable {
              endpoints = std::move(r);
              handler(e);
            });
      },
      [&] { resolver.cancel(); });
  if (ec) return describe(ec);
  if (url_.tls) {
    tls_stream_.emplace(io_, *tls_);
  } else {
    socket_.emplace(io_);
  }
  ec = run_until(
      io_, deadline, [&](auto handler) { net::async_connect(socket(), endpoints, handler); },
      [&] { socket().close(); });
  if (ec) {
    disconnect();
    return describe(ec);
  }
  return url_.tls ? handshake(deadline) : std::nullopt;
}

std::optional<std::string> ReplicaConnection::handshake(Deadline deadline) {
  if (auto unchecked = expect_peer(tls_stream_->native_handle(), url_.host)) {
    disconnect();
    return unchecked;
  }
  const error_code ec = run_until(
      io_, deadline,
      [&](auto handler) { tls_stream_->async_handshake(net::ssl::stream_base::client, handler); },
      [&] { socket().close(); });
  if (!ec) return std::nullopt;
  auto why = ec == beast::error::timeout ? describe(ec) : handshake_failure(*tls_stream_, ec);
  disconnect();
  return why;
}

Result<Answer, std::string> ReplicaConnection::exchange(std::string_view target,
                                                        Deadline deadline) {
  if (!connected()) {
    buffer_.clear();
    if (auto failed = connect(deadline)) return *failed;
  }
  const auto fail = [this](const error_code& ec) {
    disconnect();  // closes it: nothing more is read from a broken exchange
    return describe(ec);
  };
  // The same exchange over either stream.
  const auto on_stream = [this](auto operation) {
    if (tls_stream_) return operation(*tls_stream_);
    return operation(*socket_);
  };
  http::request<http::empty_body> request{http::verb::get,
                                          beast::string_view(target.data(), target.size()), 11};
  request.set(http::field::host, url_.host.find(':') == std::string::npos
                                     ? url_.host + ":" + url_.port
                                     : "[" + url_.host + "]:" + url_.port);
  request.set(http::field::user_agent, std::string("snowflaked-get/") + kVersion);
  request.keep_alive(true);
  if (const auto ec = run_until(
          io_, deadline,
          [&](auto handler) {
            on_stream([&](auto& stream) { http::async_write(stream, request, handler); });
          },
          [&] { socket().close(); })) {
    return fail(ec);
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  if (const auto ec = run_until(
          io_, deadline,
          [&](auto handler) {
            on_stream([&](auto& stream) { http::async_read(stream, buffer_, parser, handler); });
          },
          [&] { socket().close(); })) {
    return fail(ec);
  }
  auto& response = parser.get();
  Answer answer{response.result_int(), std::move(response.body()), std::nullopt};
  if (answer.status == 503) {
    const auto value = response[http::field::retry_after];
    answer.retry_after = retry_after({value.data(), value.size()});
  }
  if (!response.keep_alive()) disconnect();
  return answer;
}

}  // namespace snowflake::client
