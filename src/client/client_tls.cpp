#include "snowflake/client/client_tls.hpp"

#include <fmt/format.h>

#include "snowflake/base/tls_peer.hpp"

namespace snowflake::client {

Result<std::shared_ptr<boost::asio::ssl::context>, std::string> make_client_tls(
    const std::string& ca_file) {
  return make_peer_tls(ca_file, "--cacert");
}

std::string handshake_failure(TlsStream& stream, const boost::system::error_code& ec) {
  const std::string why =
      untrusted_peer(stream.native_handle(),
                     {"--cacert FILE: the CA that issued it", "it must name the host of the URL"});
  if (why.empty()) return fmt::format("TLS handshake failed: {}", ec.message());
  return fmt::format("TLS: the replica's certificate is not trusted: {}", why);
}

}  // namespace snowflake::client
