#include "snowflake/base/tls_peer.hpp"

#include <fmt/format.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include <unistd.h>

#include <cerrno>

#include "snowflake/base/error_text.hpp"
#include "snowflake/base/openssl_pem.hpp"

namespace snowflake {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>, std::string> make_peer_tls(const std::string& ca_file,
                                                                 std::string_view named_by) {
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
  const std::string lead = named_by.empty() ? "" : fmt::format("{}: ", named_by);
  if (::access(ca_file.c_str(), R_OK) != 0) {
    return fmt::format("{}cannot open \"{}\": {}", lead, ca_file, error_text(errno));
  }
  ctx->load_verify_file(ca_file, ec);
  // Asio took OpenSSL's error off its queue: the error code holds it.
  if (ec) {
    return fmt::format("{}\"{}\" holds no PEM certificate: {}", lead, ca_file, ec.message());
  }
  return ctx;
}

std::optional<std::string> expect_peer(SSL* ssl, const std::string& host) {
  // An IPv6 address may carry its zone ("fe80::1%eth0"): the zone says
  // which interface, the certificate names the address without it.
  const std::string address = host.substr(0, host.find('%'));
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(address, not_ip);
  // Each step must take: a host that is not checked would let any
  // certificate the CAs issued pass for this peer's.
  if (not_ip) {
    // SNI takes names only (RFC 6066, 3); an address is matched below.
    if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set1_host(ssl, host.c_str()) != 1)
      return fmt::format("TLS: \"{}\" cannot be checked against a certificate", host);
  } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), address.c_str()) != 1) {
    return fmt::format("TLS: the address \"{}\" cannot be checked against a certificate", host);
  }
  return std::nullopt;
}

std::string untrusted_peer(SSL* ssl, const PeerHints& hints) {
  const long verified = SSL_get_verify_result(ssl);
  if (verified == X509_V_OK) return "";
  const char* why = X509_verify_cert_error_string(verified);
  switch (verified) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      return fmt::format("{} ({})", why, hints.untrusted_ca);
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return fmt::format("{} ({})", why, hints.other_name);
    default:
      return why;
  }
}

}  // namespace snowflake
