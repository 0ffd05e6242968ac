#pragma once
// `snowflaked get` over https://: the replica's certificate is verified
// against the CAs of --cacert (PEM), or the system's when none is given,
// and must name the host of the URL (tls_peer.hpp).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <memory>
#include <string>

#include "snowflake/base/result.hpp"

namespace snowflake::client {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// On error: what is wrong with --cacert's file, for a usage message.
Result<std::shared_ptr<boost::asio::ssl::context>, std::string> make_client_tls(
    const std::string& ca_file);

// Why a handshake failed, in words: the verification's reason when it was
// the certificate ("certificate has expired"), else the TLS error.
std::string handshake_failure(TlsStream& stream, const boost::system::error_code& ec);

}  // namespace snowflake::client
