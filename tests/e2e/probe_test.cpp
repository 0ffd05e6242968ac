// snowflaked probe, the health check beside the daemon (the image's
// HEALTHCHECK, compose's): it reads the daemon's config, environment and
// --listen included, and asks the daemon's own listener, plain or TLS as
// the config says. Real daemons, real sockets.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/test_certificates.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const json kStatic = {{"coordinator", {{"type", "static"}, {"static_worker_id", 5}}}};

// The daemon listens where the test picked (--listen 127.0.0.1:0); the
// probe is told the same way the daemon was, as a health check would be.
RunResult probe(const Daemon& d, std::vector<std::string> more = {}) {
  std::vector<std::string> argv{snowflaked_binary(), "probe",
                                "--config",          d.config_path().string(),
                                "--listen",          "127.0.0.1:" + std::to_string(d.port())};
  argv.insert(argv.end(), more.begin(), more.end());
  return run_process(argv);
}

}  // namespace

TEST_CASE("probe: 200 from the daemon's own listener is exit 0, anything else exit 1", "[probe]") {
  Daemon d(kStatic.dump());
  const auto ready = probe(d);
  INFO(ready.err);
  CHECK(ready.status.code == 0);
  CHECK_THAT(ready.out,
             Catch::StartsWith("http://127.0.0.1:" + std::to_string(d.port()) + "/ready: 200 "));
  CHECK(probe(d, {"/health"}).status.code == 0);
  const auto missing = probe(d, {"/nowhere"});
  CHECK(missing.status.code == 1);
  CHECK_THAT(missing.out, Catch::Contains(": 404 "));
  // Its port from the environment, as the image's SNOWFLAKED_LISTEN sets it.
  const auto by_env =
      run_process({"/usr/bin/env", "SNOWFLAKED_LISTEN=127.0.0.1:" + std::to_string(d.port()),
                   snowflaked_binary(), "probe", "--config", d.config_path().string()});
  CHECK(by_env.status.code == 0);
  // Nothing listening there: exit 1 saying so.
  d.process().send_signal(SIGKILL);
  REQUIRE(d.process().wait_for_exit(10s));
  const auto gone = probe(d);
  CHECK(gone.status.code == 1);
  CHECK_THAT(gone.err, Catch::Contains("connection refused"));
}

TEST_CASE("probe: a daemon that cannot issue (no ZooKeeper) is exit 1 with its 503", "[probe]") {
  const json config = {{"coordinator", {{"type", "recycle"}}},
                       {"zookeeper", {{"hosts", "127.0.0.1:1"}, {"connect_timeout_ms", 500}}}};
  Daemon d(config.dump(), "127.0.0.1:0", {}, Genesis::as_found);
  const auto not_ready = probe(d);
  CHECK(not_ready.status.code == 1);
  CHECK_THAT(not_ready.out, Catch::Contains("/ready: 503 "));
  CHECK(probe(d, {"/health"}).status.code == 0);  // alive all the same
}

TEST_CASE("probe: a daemon serving TLS is asked over TLS, with no CA to give", "[probe][tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x2001);
  json config = kStatic;
  config["http"] = {{"tls_cert_file", server.cert.string()}, {"tls_key_file", server.key.string()}};
  Daemon d(config.dump());
  const auto ready = probe(d);
  INFO(ready.err);
  CHECK(ready.status.code == 0);
  CHECK_THAT(ready.out, Catch::StartsWith("https://127.0.0.1:"));
  // What the image's plain HEALTHCHECK did: a plain request, no answer.
  CHECK(!http_get(d.port(), "/ready"));
}

TEST_CASE(
    "probe: a bad PATH exits 2 with the usage, a config it cannot use is unhealthy (exit 1), and "
    "a secret the config names is not read",
    "[probe][cli]") {
  const auto no_slash = run_process({snowflaked_binary(), "probe", "ready"});
  CHECK(no_slash.status.code == 2);
  CHECK_THAT(no_slash.err, Catch::Contains("PATH must start with /"));
  const auto two = run_process({snowflaked_binary(), "probe", "/ready", "/health"});
  CHECK(two.status.code == 2);
  // Docker keeps a health check's exit 2 for itself: at run time, 1.
  TempDir dir;
  const auto picked = write_daemon_config(dir, R"({"http": {"listen": "127.0.0.1:0"}})");
  const auto port_zero = run_process({snowflaked_binary(), "probe", "--config", picked.string()});
  CHECK(port_zero.status.code == 1);
  CHECK_THAT(port_zero.err, Catch::Contains("127.0.0.1:0"));
  const auto missing = run_process(
      {snowflaked_binary(), "probe", "--config", (dir.path() / "missing.json").string()});
  CHECK(missing.status.code == 1);
  CHECK_THAT(missing.err, Catch::Contains("missing.json"));
  // The daemon's secrets are the daemon's: a key file the probe could not
  // read is not its business.
  json config = kStatic;
  config["zookeeper"] = {{"auth_file", (dir.path() / "unreadable-auth").string()}};
  Daemon d(kStatic.dump());
  const auto secret = write_daemon_config(dir, config.dump());
  const auto ready = run_process({snowflaked_binary(), "probe", "--config", secret.string(),
                                  "--listen", "127.0.0.1:" + std::to_string(d.port())});
  CHECK(ready.status.code == 0);
}

TEST_CASE("probe: a daemon on every IPv6 address ([::]) is asked on loopback", "[probe]") {
  Daemon d(kStatic.dump(), "[::]:0");
  const auto ready =
      run_process({snowflaked_binary(), "probe", "--config", d.config_path().string(), "--listen",
                   "[::]:" + std::to_string(d.port())});
  INFO(ready.err);
  CHECK(ready.status.code == 0);
}
