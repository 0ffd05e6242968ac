// snowflaked probe [PATH] [--config FILE] [--listen ADDR] [--timeout MS]:
// the daemon that runs with this config (and --listen, as it was given)
// asked for PATH (default /ready) on its own listener,
// over TLS when the config has a certificate. Exit 0 on 200, 1 on anything
// else or no answer, with the status and the answer printed. For health
// checks that run beside the daemon (the image's HEALTHCHECK, compose's):
// they read the config the daemon reads, environment included, so they
// follow it to TLS or another port instead of asking plain HTTP on 8080.
//
// The certificate is not verified: the daemon is asked on this host's own
// loopback (its listen port on 127.0.0.1 or ::1 when it listens on every
// address), where nobody can stand between, and the certificate names the
// address clients use, not the loopback one. Kubernetes' HTTPS probes do
// not verify either.

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <algorithm>
#include <iostream>

#include "../client/replica_connection.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "snowflake/clock.hpp"
#include "snowflake/listen_address.hpp"

namespace snowflake::commands {

namespace {

struct ProbeOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> listen;  // the daemon's --listen, over the config's
  std::string path = "/ready";
  std::chrono::milliseconds timeout{2'000};
};

// Where the daemon of `listen` answers on this host: its own address, or
// loopback's for an address that means every one. nullopt: port 0 (the
// daemon picked one at start, which the config does not say).
std::optional<client::ReplicaUrl> own_address(const std::string& listen, bool tls) {
  const auto endpoint = parse_listen_address(listen);
  if (!endpoint || endpoint->port() == 0) return std::nullopt;
  auto address = endpoint->address();
  if (address.is_unspecified()) {
    address = address.is_v6() ? boost::asio::ip::address(boost::asio::ip::address_v6::loopback())
                              : boost::asio::ip::address(boost::asio::ip::address_v4::loopback());
  }
  return client::ReplicaUrl{.text = listen,
                            .host = address.to_string(),
                            .port = std::to_string(endpoint->port()),
                            .tls = tls};
}

int probe(const ProbeOptions& options) {
  const auto config = load_config(options.config_file);
  if (!config) return kExitUsage;
  const bool tls = !config->http.tls_cert_file.empty();
  const std::string& listen = options.listen.value_or(config->http.listen);
  const auto url = own_address(listen, tls);
  if (!url) {
    return fail(kExitUsage,
                fmt::format("{}: {}: {} is no address, or one that picks its port at start: "
                            "nothing to probe",
                            options.config_file.value_or("defaults"),
                            options.listen ? "--listen" : "http.listen", listen));
  }
  boost::asio::io_context io;
  std::shared_ptr<boost::asio::ssl::context> context;
  if (tls) {
    context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
    context->set_verify_mode(boost::asio::ssl::verify_none);  // loopback: see the top
  }
  client::ReplicaConnection connection(io, *url, context);
  const auto answer = connection.get(options.path, BootClock::now() + options.timeout);
  const std::string where =
      fmt::format("{}://{}:{}{}", tls ? "https" : "http",
                  url->host.find(':') == std::string::npos ? url->host : "[" + url->host + "]",
                  url->port, options.path);
  if (!answer) return fail(kExitFailure, fmt::format("{}: {}", where, answer.error()));
  std::cout << fmt::format("{}: {} {}\n", where, answer.value().status, answer.value().body);
  return answer.value().status == 200 ? kExitOk : kExitFailure;
}

}  // namespace

Parsed probe_command(const Options& options, const Arguments& args) {
  ProbeOptions o;
  o.config_file = config_path(options);
  if (options.count("listen")) o.listen = options["listen"].as<std::string>();
  if (args.size() > 1) return std::string("probe takes at most one PATH");
  if (!args.empty()) o.path = args[0];
  // A request target of visible ASCII, as an HTTP/1.1 request line takes it.
  const bool visible =
      std::all_of(o.path.begin(), o.path.end(), [](char c) { return c > ' ' && c < 127; });
  if (o.path.empty() || o.path[0] != '/' || o.path.size() > 2048 || !visible) {
    return fmt::format(
        "probe: PATH must start with / and be visible ASCII (/ready, /health, "
        "'/ready?for=seq'), got \"{}\"",
        o.path);
  }
  if (options.count("timeout")) {
    o.timeout = std::chrono::milliseconds(options["timeout"].as<std::uint32_t>());
  }
  if (o.timeout.count() < 1) return std::string("probe: --timeout must be at least 1 ms");
  return Action([o] { return probe(o); });
}

}  // namespace snowflake::commands
