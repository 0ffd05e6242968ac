// What this program asks of a peer's certificate before a handshake
// (`snowflaked get` of a replica, a daemon of a strict tag's owner): the
// host it asked, whatever form that host takes (tls_peer.hpp).

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "snowflake/base/tls_peer.hpp"
#include "snowflake/client/client_tls.hpp"

using namespace snowflake::client;
using snowflake::expect_peer;

namespace {

// The address the handshake will require the certificate to name; empty
// when none is required.
std::string required_ip(TlsStream& stream) {
  char* ip = X509_VERIFY_PARAM_get1_ip_asc(SSL_get0_param(stream.native_handle()));
  const std::string out = ip != nullptr ? ip : "";
  OPENSSL_free(ip);
  return out;
}

}  // namespace

TEST_CASE("client TLS: an address is required of the certificate, an IPv6 zone left out of it",
          "[get][tls]") {
  boost::asio::io_context io;
  auto ctx = make_client_tls("").value();
  {
    TlsStream stream(io, *ctx);
    CHECK_FALSE(expect_peer(stream.native_handle(), "127.0.0.1"));
    CHECK(required_ip(stream) == "127.0.0.1");
  }
  {
    TlsStream stream(io, *ctx);
    CHECK_FALSE(expect_peer(stream.native_handle(), "::1"));
    CHECK(required_ip(stream) == "0:0:0:0:0:0:0:1");
  }
  {
    // Unchecked, this address would let any certificate the CAs issued
    // pass for the replica's.
    TlsStream stream(io, *ctx);
    CHECK_FALSE(expect_peer(stream.native_handle(), "fe80::1%eth0"));
    CHECK(required_ip(stream) == "FE80:0:0:0:0:0:0:1");
  }
  {
    TlsStream stream(io, *ctx);
    CHECK_FALSE(expect_peer(stream.native_handle(), "ids.internal"));
    CHECK(required_ip(stream).empty());
    const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
    REQUIRE(sni != nullptr);
    CHECK(std::string(sni) == "ids.internal");
  }
}
