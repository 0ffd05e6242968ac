#include "tls_client.hpp"

#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace snowflake::test {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;

namespace {

// A timed-out operation closes the socket: the TLS stream is unusable after it.
void close_socket(net::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.close(ignored);
}

ssl::context client_context(const TlsClientOptions& o) {
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_verify_mode(ssl::verify_peer);
  ctx.load_verify_file(o.ca_file.string());
  if (o.client) {
    ctx.use_certificate_chain_file(o.client->cert.string());
    ctx.use_private_key_file(o.client->key.string(), ssl::context::pem);
  }
  // Offered so that a test can see the server choose it.
  static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx.native_handle(), kAlpn, sizeof kAlpn);
  return ctx;
}

}  // namespace

TlsConnection::TlsConnection(unsigned short port, TlsClientOptions options)
    : ctx_(client_context(options)), stream_(ioc_, ctx_), timeout_(options.timeout) {
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream_.native_handle()), options.address.c_str());
  const net::ip::tcp::endpoint endpoint(net::ip::make_address(options.address), port);
  auto ec = run_with_deadline(
      ioc_, timeout_, [&](auto handler) { stream_.next_layer().async_connect(endpoint, handler); },
      [&] { close_socket(stream_.next_layer()); });
  if (!ec) {
    ec = run_with_deadline(
        ioc_, timeout_,
        [&](auto handler) { stream_.async_handshake(ssl::stream_base::client, handler); },
        [&] { close_socket(stream_.next_layer()); });
  }
  if (ec) {
    const long verified = SSL_get_verify_result(stream_.native_handle());
    handshake_error_ =
        verified != X509_V_OK ? X509_verify_cert_error_string(verified) : ec.message();
    if (handshake_error_.empty()) handshake_error_ = "failed";
  }
}

bool TlsConnection::send(const std::string& bytes) {
  const auto ec = run_with_deadline(
      ioc_, timeout_, [&](auto handler) { net::async_write(stream_, net::buffer(bytes), handler); },
      [&] { close_socket(stream_.next_layer()); });
  return !ec;
}

std::optional<HttpReply> TlsConnection::read_reply() {
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  const auto ec = run_with_deadline(
      ioc_, timeout_, [&](auto handler) { http::async_read(stream_, buffer_, parser, handler); },
      [&] { close_socket(stream_.next_layer()); });
  if (ec) return std::nullopt;
  return reply_of(parser.get());
}

std::optional<HttpReply> TlsConnection::request(const std::string& target,
                                                const std::string& extra_headers) {
  if (!handshake_error_.empty()) return std::nullopt;
  if (!send("GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n"))
    return std::nullopt;
  return read_reply();
}

std::string TlsConnection::peer_serial() {
  X509* cert = SSL_get0_peer_certificate(stream_.native_handle());
  if (cert == nullptr) return "";
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* hex = BN_bn2hex(bn);
  std::string out = hex != nullptr ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

std::string TlsConnection::protocol() { return SSL_get_version(stream_.native_handle()); }

std::string TlsConnection::alpn() {
  const unsigned char* data = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(stream_.native_handle(), &data, &size);
  return data != nullptr ? std::string(reinterpret_cast<const char*>(data), size) : "";
}

}  // namespace snowflake::test
