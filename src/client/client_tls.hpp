#pragma once
// `snowflaked get` over https://: the replica's certificate is verified
// against the CAs of --cacert (PEM), or the system's when none is given,
// and must name the host of the URL (a DNS name, or an IP address in its
// subjectAltName); SNI names it too.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <memory>
#include <optional>
#include <string>

#include "snowflake/result.hpp"

namespace snowflake::client {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// TLS 1.2 or later, peers verified. `ca_file` empty: the system's CAs. On
// error: what is wrong with the file, for a usage message.
Result<std::shared_ptr<boost::asio::ssl::context>, std::string> make_client_tls(
    const std::string& ca_file);

// Before the handshake: the host the certificate must name, and SNI. On
// error (a host OpenSSL cannot check), why: the handshake must not go on.
std::optional<std::string> expect_peer(TlsStream& stream, const std::string& host);

// Why a handshake failed, in words: the verification's reason when it was
// the certificate ("certificate has expired"), else the TLS error.
std::string handshake_failure(TlsStream& stream, const boost::system::error_code& ec);

}  // namespace snowflake::client
