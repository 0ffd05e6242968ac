#pragma once
// The listeners' TLS contexts, built from a checked identity
// (tls_identity.hpp): TLS 1.2 and 1.3 only, forward-secret AEAD ciphers in
// 1.2, no compression, no renegotiation, ALPN "http/1.1" for clients that
// offer it. A context is never changed once built: a new certificate is a
// new context (tls_reloader.hpp), and each connection keeps the one it was
// accepted with for its whole life.

#include <memory>
#include <string>

#include "snowflake/base/result.hpp"
#include "snowflake/base/tls_identity.hpp"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace snowflake::http {

struct TlsContexts {
  std::shared_ptr<boost::asio::ssl::context> main;
  // The admin listener's: one that asks every client for a certificate
  // issued by the identity's client CAs, when it has some; else `main`.
  std::shared_ptr<boost::asio::ssl::context> admin;
};

// On error: what OpenSSL refused, and in which file (the identity was
// checked already, so this is rare: a key type the TLS library cannot use).
Result<TlsContexts, TlsFileError> make_tls_contexts(const TlsIdentity& identity);

}  // namespace snowflake::http
