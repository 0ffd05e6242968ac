#pragma once
// The TLS side's figures, kept by the reloader (http/tls_reloader.hpp) and
// the server (http/server.hpp), rendered by metrics.cpp: apart from
// metrics.hpp so that the server counts without including the rest.

#include <array>
#include <atomic>
#include <cstdint>

namespace snowflake {

// The listeners' TLS (http.tls_cert_file), written by the certificate
// reloader and read when /metrics is rendered; nothing is exported while
// `enabled` is false (plain HTTP).
struct TlsGauges {
  std::atomic<bool> enabled{false};
  // The served certificate's notBefore and notAfter: its whole life, so
  // that an alert can say "a fifth of it left" for certificates of any length.
  std::atomic<std::int64_t> cert_not_before_s{0};
  std::atomic<std::int64_t> cert_not_after_s{0};
  std::atomic<std::uint64_t> reloads_ok{0};
  std::atomic<std::uint64_t> reloads_failed{0};
  // The files on disk changed and cannot be served, as of the last look:
  // the counter above grows once per change, this stays until one loads.
  std::atomic<bool> reload_failing{false};
  // Handshakes that did not complete, by listener (0 main, 1 admin): a
  // client that does not trust the certificate, one without the client
  // certificate the admin listener asks for, plain HTTP, a timeout.
  std::array<std::atomic<std::uint64_t>, 2> handshakes_failed{};
};

}  // namespace snowflake
