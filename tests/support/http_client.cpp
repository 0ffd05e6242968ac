#include "http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <cctype>

namespace snowflake::test {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

// A timed-out read is cancelled: the socket stays open, as the test left it.
void cancel(net::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.cancel(ignored);
}

}  // namespace

HttpConnection::HttpConnection(unsigned short port, const std::string& host,
                               std::chrono::milliseconds timeout)
    : socket_(ioc_), timeout_(timeout) {
  socket_.connect(net::ip::tcp::endpoint(net::ip::make_address(host), port));
}

void HttpConnection::send(std::string_view bytes) {
  net::write(socket_, net::buffer(bytes.data(), bytes.size()));
}

HttpReply reply_of(const http::response<http::string_body>& res) {
  HttpReply reply;
  reply.status = res.result_int();
  for (const auto& f : res) {
    std::string name(f.name_string().data(), f.name_string().size());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    reply.headers[name] = std::string(f.value().data(), f.value().size());
  }
  reply.body = res.body();
  reply.keep_alive = res.keep_alive();
  return reply;
}

std::optional<HttpReply> HttpConnection::read_reply(bool to_head) {
  http::response_parser<http::string_body> parser;
  parser.skip(to_head);
  parser.body_limit(64 * 1024 * 1024);
  const auto ec = run_with_deadline(
      ioc_, timeout_, [&](auto handler) { http::async_read(socket_, buffer_, parser, handler); },
      [&] { cancel(socket_); });
  if (ec) return std::nullopt;
  return reply_of(parser.get());
}

std::optional<HttpReply> HttpConnection::request(const std::string& target,
                                                 const std::string& method,
                                                 const std::string& extra_headers) {
  send(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n");
  return read_reply(method == "HEAD");
}

bool HttpConnection::closed_by_server(std::chrono::milliseconds within) {
  if (buffer_.size() > 0) return false;  // the server sent more: not closed
  char byte;
  const auto ec = run_with_deadline(
      ioc_, within, [&](auto handler) { socket_.async_read_some(net::buffer(&byte, 1), handler); },
      [&] { cancel(socket_); });
  return ec == net::error::eof || ec == net::error::connection_reset;
}

std::optional<HttpReply> http_get(unsigned short port, const std::string& target,
                                  const std::string& extra_headers) {
  HttpConnection c(port);
  return c.request(target, "GET", extra_headers);
}

}  // namespace snowflake::test
