#include "client_tls.hpp"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <fstream>

#include "../error_text.hpp"
#include "../openssl_pem.hpp"

namespace snowflake::client {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>, std::string> make_client_tls(const std::string& ca_file) {
  const openssl::ErrorQueueCleared cleared;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return fmt::format("the system's CA certificates: {}", ec.message());
    return ctx;
  }
  if (!std::ifstream(ca_file)) {
    return fmt::format("--cacert: cannot open \"{}\": {}", ca_file, error_text(errno));
  }
  ctx->load_verify_file(ca_file, ec);
  if (ec) {
    return fmt::format("--cacert: \"{}\" holds no PEM certificate: {}", ca_file,
                       openssl::last_error_reason());
  }
  return ctx;
}

void expect_peer(TlsStream& stream, const std::string& host) {
  SSL* ssl = stream.native_handle();
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  if (not_ip) {
    // SNI takes names only (RFC 6066, 3); an address is matched below.
    SSL_set_tlsext_host_name(ssl, host.c_str());
    SSL_set1_host(ssl, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
  }
}

std::string handshake_failure(TlsStream& stream, const boost::system::error_code& ec) {
  const long verified = SSL_get_verify_result(stream.native_handle());
  if (verified != X509_V_OK) {
    return fmt::format(
        "TLS: the replica's certificate is not trusted: {} (--cacert FILE: the CA that issued it)",
        X509_verify_cert_error_string(verified));
  }
  return fmt::format("TLS handshake failed: {}", ec.message());
}

}  // namespace snowflake::client
