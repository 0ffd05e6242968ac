// http's TLS keys: the listeners' certificate and key, the CAs of the admin
// listener's client certificates, and how often the files are looked at.
//
//   "http": {"tls_cert_file": "/etc/snowflaked/tls/tls.crt",
//            "tls_key_file": "/etc/snowflaked/tls/tls.key",
//            "admin_client_ca_file": "/etc/snowflaked/tls/clients-ca.pem",
//            "tls_reload_interval_ms": 5000,
//            "forward_ca_file": "/etc/snowflaked/tls/ca.pem",
//            "forward_tls_name": "snowflaked.ids.svc"}
//
// The files are read and checked here, so that a daemon with a wrong one
// never starts (exit code 2 naming the key) and check-config finds it first.

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "config_parts.hpp"
#include "snowflake/base/tls_peer.hpp"

namespace snowflake {

namespace {

// A name a certificate can be checked for: an IP address, or a DNS name of
// labels of letters, digits and inner hyphens, 63 characters each at most
// (RFC 1123; a wildcard is the certificate's, never the name asked for).
// "host:port" is neither: the port is the advertised address's.
bool checkable_name(const std::string& name) {
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(name, not_ip);
  if (!not_ip) return true;
  if (name.empty() || name.size() > 253) return false;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(name.find('.', begin), name.size());
    const std::string_view label(name.data() + begin, end - begin);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (const char c : label) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') return false;
    }
    if (end == name.size()) return true;
    begin = end + 1;
  }
}

// Usable with or without TLS on this daemon's listeners: a plain daemon
// passes requests on to owners that serve TLS too (a fleet part-way through
// turning TLS on).
void read_forwarding_tls(JsonSection& http, HttpSettings& h,
                         const std::string& credentials_directory) {
  const HttpSettings d;
  h.forward_ca_file = http.string("forward_ca_file", d.forward_ca_file);
  h.forward_tls_name = http.string("forward_tls_name", d.forward_tls_name);
  if (!h.forward_tls_name.empty() && !checkable_name(h.forward_tls_name)) {
    http.fail("forward_tls_name",
              fmt::format("\"{}\" is not a DNS name or an IP address a certificate can name",
                          h.forward_tls_name));
  }
  if (h.forward_ca_file.empty()) {
    if (!h.forward_tls_name.empty()) {
      http.fail("forward_tls_name",
                "needs http.forward_ca_file: requests are passed on over TLS only with the CAs "
                "to verify an owner by");
    }
    return;
  }
  h.forward_ca_file = secret_path(h.forward_ca_file, credentials_directory);
  // Read now, so that a wrong file never starts a daemon; the daemon reads
  // it again for the context it uses.
  if (auto made = make_peer_tls(h.forward_ca_file, ""); !made) {
    http.fail("forward_ca_file", made.error());
  }
}

}  // namespace

void read_tls(JsonSection& http, HttpSettings& h, const std::string& credentials_directory) {
  const HttpSettings d;
  h.tls_cert_file = http.string("tls_cert_file", d.tls_cert_file);
  h.tls_key_file = http.string("tls_key_file", d.tls_key_file);
  h.admin_client_ca_file = http.string("admin_client_ca_file", d.admin_client_ca_file);
  h.tls_reload_interval = std::chrono::milliseconds(
      http.integer("tls_reload_interval_ms", d.tls_reload_interval.count(), 100, 3'600'000));
  // One without the other would serve plain HTTP where TLS was meant.
  if (!h.tls_cert_file.empty() && h.tls_key_file.empty())
    http.fail("tls_key_file", "is required with http.tls_cert_file (the certificate's key)");
  if (h.tls_cert_file.empty() && !h.tls_key_file.empty())
    http.fail("tls_cert_file", "is required with http.tls_key_file (the key's certificate)");
  if (!h.admin_client_ca_file.empty()) {
    if (h.tls_cert_file.empty()) {
      http.fail("admin_client_ca_file",
                "needs TLS: set http.tls_cert_file and http.tls_key_file too (a client "
                "certificate is asked for in the TLS handshake)");
    }
    // Without an admin listener the operators' routes are on the main one,
    // which asks no client for a certificate: the key would protect nothing.
    if (h.admin_listen.empty()) {
      http.fail("admin_client_ca_file",
                "needs http.admin_listen: client certificates are asked for on the admin "
                "listener only");
    }
  }
  read_forwarding_tls(http, h, credentials_directory);
  if (h.tls_cert_file.empty()) return;
  h.tls_files = {secret_path(h.tls_cert_file, credentials_directory),
                 secret_path(h.tls_key_file, credentials_directory),
                 secret_path(h.admin_client_ca_file, credentials_directory)};
  auto identity = load_tls_identity(h.tls_files);
  if (!identity) http.fail(tls_file_key(identity.error().file), identity.error().message);
  h.tls = std::make_shared<const TlsIdentity>(std::move(identity).value());
}

}  // namespace snowflake
