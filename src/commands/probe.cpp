// snowflaked probe [PATH] [--config FILE] [--listen ADDR] [--timeout MS]:
// the daemon that runs with this config (and --listen, as it was given)
// asked for PATH (default /ready) on its own listener, over TLS when the
// config has a certificate. Exit 0 on 200; 1 on anything else, no answer,
// or a config it cannot read, with the status and the answer printed. For
// health checks that run beside the daemon (the image's HEALTHCHECK,
// compose's): they follow the daemon to TLS or another port instead of
// asking plain HTTP on 8080.
//
// Of the config it reads http.listen (SNOWFLAKED_LISTEN over it) and
// whether http.tls_cert_file is set, nothing else: a health check must not
// fail on a secret file it need not read (a key only the daemon's user may
// read, one being rotated), and Docker keeps exit code 2 of a health check
// for itself, so nothing at run time exits 2.
//
// The certificate is not verified: the daemon is asked on this host's own
// loopback (its listen port on 127.0.0.1 or ::1 when it listens on every
// address), where nobody can stand between, and the certificate names the
// address clients use, not the loopback one. Kubernetes' HTTPS probes do
// not verify either.

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/listen_address.hpp"
#include "snowflake/client/replica_connection.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/config/config.hpp"

namespace snowflake::commands {

namespace {

struct ProbeOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> listen;  // the daemon's --listen, over the config's
  std::string path = "/ready";
  std::chrono::milliseconds timeout{1'000};
};

// Where the daemon listens and whether it serves TLS, as its config says.
struct Listener {
  std::string listen;
  bool tls = false;
};

Result<Listener, std::string> listener_of(const ProbeOptions& options) {
  Listener out{HttpSettings{}.listen};
  if (options.config_file) {
    std::ifstream in(*options.config_file);
    if (!in) return fmt::format("{}: cannot read it", *options.config_file);
    const auto config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    const auto http = config.is_object() ? config.find("http") : config.end();
    if (config.is_discarded() || !config.is_object()) {
      return fmt::format("{}: not a JSON object", *options.config_file);
    }
    if (http != config.end() && http->is_object()) {
      if (const auto listen = http->find("listen"); listen != http->end() && listen->is_string()) {
        out.listen = listen->get<std::string>();
      }
      const auto cert = http->find("tls_cert_file");
      out.tls = cert != http->end() && cert->is_string() && !cert->get<std::string>().empty();
    }
  }
  // As the daemon takes them: the environment over the file, --listen over both.
  // Read before any thread starts; nothing calls setenv.
  const char* env = std::getenv("SNOWFLAKED_LISTEN");  // NOLINT(concurrency-mt-unsafe)
  if (env && *env) out.listen = env;
  if (options.listen) out.listen = *options.listen;
  return out;
}

// Where the daemon of `listen` answers on this host: its own address, or
// loopback's for an address that means every one ([::] answers IPv4 too,
// and ::1 is missing where IPv6 is off: both are tried). Empty: no address,
// or port 0 (the daemon picked one at start, which the config does not say).
std::vector<client::ReplicaUrl> own_addresses(const std::string& listen, bool tls) {
  const auto endpoint = parse_listen_address(listen);
  if (!endpoint || endpoint->port() == 0) return {};
  std::vector<boost::asio::ip::address> addresses{endpoint->address()};
  if (endpoint->address().is_unspecified()) {
    addresses = {boost::asio::ip::address_v4::loopback()};
    if (endpoint->address().is_v6()) {
      addresses.insert(addresses.begin(), boost::asio::ip::address_v6::loopback());
    }
  }
  std::vector<client::ReplicaUrl> out;
  for (const auto& address : addresses) {
    const std::string host = address.to_string();
    const std::string port = std::to_string(endpoint->port());
    out.push_back({.text = fmt::format("{}://{}:{}", tls ? "https" : "http",
                                       address.is_v6() ? "[" + host + "]" : host, port),
                   .host = host,
                   .port = port,
                   .tls = tls});
  }
  return out;
}

int probe(const ProbeOptions& options) {
  const auto listener = listener_of(options);
  if (!listener) return fail(kExitFailure, listener.error());
  const auto urls = own_addresses(listener.value().listen, listener.value().tls);
  if (urls.empty()) {
    return fail(kExitFailure,
                fmt::format("listen address {}: no address, or one that picks its port at "
                            "start: nothing to probe",
                            listener.value().listen));
  }
  std::shared_ptr<boost::asio::ssl::context> context;
  if (listener.value().tls) {
    context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
    context->set_verify_mode(boost::asio::ssl::verify_none);  // loopback: see the top
  }
  const auto deadline = BootClock::now() + options.timeout;
  std::string errors;
  for (const auto& url : urls) {
    boost::asio::io_context io;
    client::ReplicaConnection connection(io, url, context);
    const auto answer = connection.get(options.path, deadline);
    if (!answer) {
      errors += fmt::format("{}{}: {}", errors.empty() ? "" : "; ", url.text + options.path,
                            answer.error());
      continue;
    }
    std::cout << fmt::format("{}{}: {} {}\n", url.text, options.path, answer.value().status,
                             answer.value().body);
    return answer.value().status == 200 ? kExitOk : kExitFailure;
  }
  return fail(kExitFailure, errors);
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
