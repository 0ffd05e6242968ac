#pragma once
// A blocking HTTPS client for the TLS tests, over a real socket and
// OpenSSL: it verifies the server's certificate against a CA file and the
// address it connects to, may present a client certificate, keeps its
// connection alive between requests, and tells which certificate and
// protocol it got. Every step has a deadline, so a test can fail but never
// hang.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "http_client.hpp"
#include "test_certificates.hpp"

namespace snowflake::test {

struct TlsClientOptions {
  std::filesystem::path ca_file{};           // the CAs the server's certificate must chain to
  std::optional<CertificateFiles> client{};  // a client certificate to present
  std::string address = "127.0.0.1";         // connected to, and checked against the certificate
  std::chrono::milliseconds timeout{10'000};
};

class TlsConnection {
 public:
  // Connects and shakes hands; handshake_error() says whether that worked.
  TlsConnection(unsigned short port, TlsClientOptions options);

  // Empty when the handshake succeeded; else why not.
  const std::string& handshake_error() const { return handshake_error_; }
  // GET with keep-alive: the reply, or nullopt if the connection failed or
  // closed first (a TLS 1.3 server refuses a client certificate after the
  // client's side of the handshake is done: at the first read).
  std::optional<HttpReply> request(const std::string& target,
                                   const std::string& extra_headers = "");
  // Raw bytes, for a request the test writes itself.
  bool send(const std::string& bytes);
  std::optional<HttpReply> read_reply();

  std::string peer_serial();  // the server certificate's, upper-case hex as OpenSSL prints it
  std::string protocol();     // "TLSv1.3"
  std::string alpn();         // the protocol ALPN chose; empty: none

 private:
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ctx_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
  std::string handshake_error_;
};

}  // namespace snowflake::test
