#pragma once
// A blocking HTTP/1.1 client for e2e tests, over a real socket. Every read
// has a deadline (an async read run for a bounded time: a socket receive
// timeout would not do, as Asio's blocking read polls on past it), so a test
// can fail but never hang.

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace snowflake::test {

struct HttpReply {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  bool keep_alive = false;
};

// Runs the operation `start` begins on `ioc` (a connection's own) for at
// most `timeout`; past it, `stop` ends the operation (cancels it, or closes
// the socket) and the answer is timed_out. For the plain and the TLS client.
template <class Start, class Stop>
boost::system::error_code run_with_deadline(boost::asio::io_context& ioc,
                                            std::chrono::milliseconds timeout, Start start,
                                            Stop stop) {
  boost::system::error_code result = boost::asio::error::would_block;
  bool done = false;
  start([&](boost::system::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  ioc.restart();
  ioc.run_for(timeout);
  if (!done) {
    stop();
    ioc.restart();
    ioc.run();  // lets the ended operation finish
    result = boost::asio::error::timed_out;
  }
  return result;
}

// A parsed response as the tests read it (over plain HTTP or TLS).
HttpReply reply_of(const boost::beast::http::response<boost::beast::http::string_body>& res);

class HttpConnection {
 public:
  explicit HttpConnection(unsigned short port, const std::string& host = "127.0.0.1",
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

  void send(std::string_view bytes);
  // One response; nullopt if the connection closed or timed out first. A
  // response to HEAD has a Content-Length but no body: say so.
  std::optional<HttpReply> read_reply(bool to_head = false);
  // GET (or another method) with keep-alive; the reply or nullopt.
  std::optional<HttpReply> request(const std::string& target, const std::string& method = "GET",
                                   const std::string& extra_headers = "");
  // True if the server closes the connection (EOF or reset) within `within`
  // without sending anything more.
  bool closed_by_server(std::chrono::milliseconds within);

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
};

// One request on a fresh connection.
std::optional<HttpReply> http_get(unsigned short port, const std::string& target,
                                  const std::string& extra_headers = "");

}  // namespace snowflake::test
