#include "http_client.hpp"

#include <sys/socket.h>
#include <sys/time.h>

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

void set_receive_timeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

HttpConnection::HttpConnection(unsigned short port, const std::string& host,
                               std::chrono::milliseconds timeout)
    : socket_(ioc_) {
  const auto address = net::ip::make_address(host);
  socket_.connect(net::ip::tcp::endpoint(address, port));
  set_receive_timeout(socket_.native_handle(), timeout);
}

void HttpConnection::send(std::string_view bytes) {
  net::write(socket_, net::buffer(bytes.data(), bytes.size()));
}

std::optional<HttpReply> HttpConnection::read_reply(bool to_head) {
  http::response_parser<http::string_body> parser;
  parser.skip(to_head);
  parser.body_limit(64 * 1024 * 1024);
  boost::system::error_code ec;
  http::read(socket_, buffer_, parser, ec);
  if (ec) return std::nullopt;
  const auto& res = parser.get();
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

std::optional<HttpReply> HttpConnection::request(const std::string& target,
                                                 const std::string& method,
                                                 const std::string& extra_headers) {
  send(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n");
  return read_reply(method == "HEAD");
}

bool HttpConnection::closed_by_server(std::chrono::milliseconds within) {
  set_receive_timeout(socket_.native_handle(), within);
  char byte;
  boost::system::error_code ec;
  // Anything left in our buffer means the server sent more: not closed.
  if (buffer_.size() > 0) return false;
  const auto n = socket_.read_some(net::buffer(&byte, 1), ec);
  return n == 0 && (ec == net::error::eof || ec == net::error::connection_reset);
}

std::optional<HttpReply> http_get(unsigned short port, const std::string& target,
                                  const std::string& extra_headers) {
  HttpConnection c(port);
  return c.request(target, "GET", extra_headers);
}

}  // namespace snowflake::test
