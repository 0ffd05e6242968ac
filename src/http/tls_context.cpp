#include "snowflake/http/tls_context.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>

#include "snowflake/base/openssl_pem.hpp"

#include <array>
#include <string_view>

namespace snowflake::http {

namespace {

namespace ssl = boost::asio::ssl;

// TLS 1.2's suites (1.3 has only good ones): ECDHE for forward secrecy and
// AEAD, Mozilla's "intermediate" list less its finite-field DHE (which needs
// parameters of our own and gains nothing over ECDHE).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Session resumption is per context; a context that verifies clients must
// name its sessions, or OpenSSL refuses to resume them (and a reloaded
// context's sessions are another context's: they are not resumed there).
constexpr std::string_view kSessionContext = "snowflaked";

// ALPN: "http/1.1" when the client offers it; a client that offers only
// others (h2) is answered without ALPN rather than refused, and speaks
// HTTP/1.1 as it would without TLS.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* in,
                  unsigned int in_size, void*) {
  static constexpr std::array<unsigned char, 9> kHttp11 = {8,   'h', 't', 't', 'p',
                                                           '/', '1', '.', '1'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_size, kHttp11.data(), kHttp11.size(), in, in_size) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

using openssl::Bio;
using openssl::KeyPtr;
using openssl::memory_bio;
using openssl::no_passphrase;
using openssl::X509Ptr;

TlsFileError openssl_error(TlsFile file, std::string_view step) {
  return {file, fmt::format("{}: {}", step, openssl::last_error_reason())};
}

// Every client CA: trusted for verification, and named in the handshake's
// certificate request (so that a client with several picks the right one).
bool add_client_cas(SSL_CTX* native, const std::string& pem) {
  const Bio bio = memory_bio(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(native);
  int added = 0;
  while (X509Ptr ca{PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)}) {
    if (X509_STORE_add_cert(store, ca.get()) != 1 || SSL_CTX_add_client_CA(native, ca.get()) != 1)
      return false;
    ++added;
  }
  ERR_clear_error();  // the "no start line" that ended the loop
  return added > 0;
}

Result<std::shared_ptr<ssl::context>, TlsFileError> make_context(const TlsIdentity& id,
                                                                 bool verify_clients) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // SSL_OP_ALL: the harmless bug workarounds. SSL_OP_NO_TICKET: sessions
  // resume from the context's own cache, not from tickets sealed with a key
  // that would live, never rotated, as long as the certificate.
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | SSL_OP_ALL);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1)
    return openssl_error(TlsFile::cert, "ciphers");
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(id.chain_pem), ec);
  // Asio took OpenSSL's error off its queue: the error code holds it.
  if (ec) return TlsFileError{TlsFile::cert, "the certificate chain: " + ec.message()};
  const Bio key_bio = memory_bio(id.key_pem);
  const KeyPtr key{PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr)};
  if (!key || SSL_CTX_use_PrivateKey(native, key.get()) != 1 ||
      SSL_CTX_check_private_key(native) != 1) {
    return openssl_error(TlsFile::key, "the private key");
  }
  SSL_CTX_set_session_id_context(native,
                                 reinterpret_cast<const unsigned char*>(kSessionContext.data()),
                                 static_cast<unsigned int>(kSessionContext.size()));
  SSL_CTX_set_alpn_select_cb(native, select_http11, nullptr);
  if (verify_clients) {
    if (!add_client_cas(native, id.client_ca_pem))
      return openssl_error(TlsFile::client_ca, "the client CAs");
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

}  // namespace

Result<TlsContexts, TlsFileError> make_tls_contexts(const TlsIdentity& identity) {
  const openssl::ErrorQueueCleared cleared;
  auto main = make_context(identity, false);
  if (!main) return main.error();
  TlsContexts out{main.value(), main.value()};
  if (!identity.client_ca_pem.empty()) {
    auto admin = make_context(identity, true);
    if (!admin) return admin.error();
    out.admin = std::move(admin).value();
  }
  return out;
}

}  // namespace snowflake::http
