#pragma once
// The client's side of TLS, wherever this program is one: `snowflaked get`
// asking a replica over https://, and a daemon passing a strict tag's
// request on to its owner over TLS. The peer's certificate is verified
// against the CAs of a PEM file (or the system's when none is named) and
// must name the host asked (a DNS name, or an IP address in its
// subjectAltName); SNI names it too.

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"

namespace snowflake {

// TLS 1.2 or later, peers verified. `ca_file` empty: the system's CAs. On
// error: what is wrong with the file, led by `named_by` (the flag that
// named it: "--cacert"; "": not led, as a config key's fault is).
Result<std::shared_ptr<boost::asio::ssl::context>, std::string> make_peer_tls(
    const std::string& ca_file, std::string_view named_by);

// Before the handshake: the host the certificate must name, and SNI. On
// error (a host OpenSSL cannot check), why: the handshake must not go on.
std::optional<std::string> expect_peer(SSL* ssl, const std::string& host);

// Why the peer's certificate was not trusted, in OpenSSL's words ("certificate
// has expired"), with `hint` for the usual causes (an unknown CA, another
// name); "" when the certificate was not the reason the handshake failed.
struct PeerHints {
  std::string untrusted_ca;  // what to do when the CA is unknown
  std::string other_name;    // ... and when the certificate names another host
};
std::string untrusted_peer(SSL* ssl, const PeerHints& hints);

}  // namespace snowflake
