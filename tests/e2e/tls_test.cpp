// TLS on the listeners (http.tls_cert_file, http.tls_key_file,
// http.admin_client_ca_file), with certificates the openssl command line
// makes, against the real daemon: curl, openssl s_client and snowflaked get
// as clients; client certificates on the admin listener; a rotated
// certificate taken up without a restart (by rename, by a swapped directory
// link as Kubernetes' secret volumes do), a broken one refused; bad configs.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/test_certificates.hpp"
#include "../support/tls_client.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json tls_config(const CertificateFiles& server, json http = json::object()) {
  http["tls_cert_file"] = server.cert.string();
  http["tls_key_file"] = server.key.string();
  return json{{"coordinator", {{"type", "static"}, {"static_worker_id", 3}}}, {"http", http}};
}

std::string https(unsigned short port, const std::string& host = "127.0.0.1") {
  return "https://" + host + ":" + std::to_string(port);
}

// The admin listener's port, from the start-up line ("admin listener
// 127.0.0.1:41235").
unsigned short admin_port(const Daemon& d) {
  const std::string log = d.process().stderr_text();
  const std::string marker = "admin listener 127.0.0.1:";
  const auto at = log.find(marker);
  REQUIRE(at != std::string::npos);
  return static_cast<unsigned short>(std::stoi(log.substr(at + marker.size())));
}

// A series' value from /metrics, read over TLS; -1 if absent.
double tls_metric(unsigned short port, const fs::path& ca, const std::string& series) {
  TlsConnection c(port, {.ca_file = ca});
  const auto r = c.request("/metrics");
  if (!r || r->status != 200) return -1;
  const auto at = r->body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(r->body.substr(at + series.size() + 2));
}

const std::string kReloadsOk = "snowflake_tls_reloads_total{result=\"ok\"}";
const std::string kReloadsFailed = "snowflake_tls_reloads_total{result=\"failed\"}";
const std::string kReloadFailing = "snowflake_tls_reload_failing";

// Whether a new connection is served the certificate with `serial`.
bool serves(unsigned short port, const fs::path& ca, const std::string& serial) {
  TlsConnection c(port, {.ca_file = ca});
  return c.handshake_error().empty() && c.peer_serial() == serial;
}

void copy_over(const fs::path& from, const fs::path& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// Replaces `target` in one step, as cert-manager's tools do: written beside
// it under another name, then renamed over it.
void rename_over(const fs::path& from, const fs::path& target) {
  const fs::path next = target.string() + ".next";
  copy_over(from, next);
  fs::rename(next, target);
}

RunResult run_daemon_with(const TempDir& dir, const json& config) {
  const auto path = dir.write("bad.json", config.dump());
  return run_process({snowflaked_binary(), "--config", path.string(), "--listen", "127.0.0.1:0"},
                     20s);
}

}  // namespace

TEST_CASE(
    "tls: curl and openssl s_client verify the certificate over TLS 1.2 and 1.3, older is "
    "refused, plain HTTP gets no answer",
    "[tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  Daemon d(tls_config(server).dump());

  const auto curl = run_process({"/usr/bin/curl", "-sS", "--cacert", ca.cert.string(),
                                 https(d.port()) + "/id/order?format=text"});
  INFO(curl.err);
  REQUIRE(curl.status.code == 0);
  CHECK(std::stoull(curl.out) > 0);
  // A DNS name of the certificate, sent as SNI (localhost may resolve to
  // ::1 first: curl moves on to 127.0.0.1).
  const auto by_name = run_process({"/usr/bin/curl", "-sS", "--cacert", ca.cert.string(),
                                    https(d.port(), "localhost") + "/health"});
  INFO(by_name.err);
  CHECK(by_name.status.code == 0);

  for (const std::string version : {"1_2", "1_3"}) {
    const auto s = run_process({"/usr/bin/openssl", "s_client", "-connect",
                                "127.0.0.1:" + std::to_string(d.port()), "-CAfile",
                                ca.cert.string(), "-verify_return_error", "-tls" + version});
    INFO(s.out << s.err);
    CHECK(s.status.code == 0);
    CHECK_THAT(s.out, Catch::Contains("Verify return code: 0 (ok)"));
    CHECK_THAT(s.out, Catch::Contains("TLSv1." + version.substr(2)));
  }
  // TLS 1.1, offered by a client that would take it: the server refuses.
  const auto old = run_process({"/usr/bin/openssl", "s_client", "-connect",
                                "127.0.0.1:" + std::to_string(d.port()), "-tls1_1", "-cipher",
                                "DEFAULT@SECLEVEL=0"});
  CHECK(old.status.code != 0);

  TlsConnection c(d.port(), {.ca_file = ca.cert});
  REQUIRE(c.handshake_error().empty());
  CHECK(c.alpn() == "http/1.1");
  CHECK(c.peer_serial() == "1001");

  // Plain HTTP on the TLS port: no HTTP answer, the connection closed.
  HttpConnection plain(d.port());
  CHECK_FALSE(plain.request("/id/order").has_value());
}

TEST_CASE(
    "tls: keep-alive, pipelining and Connection close behave as over plain HTTP, and a handshake "
    "that never comes times out",
    "[tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  Daemon d(tls_config(server, {{"request_timeout_ms", 500}}).dump());

  TlsConnection c(d.port(), {.ca_file = ca.cert});
  REQUIRE(c.handshake_error().empty());
  for (int i = 0; i < 3; ++i) {
    const auto r = c.request("/id/a");
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->keep_alive);
  }
  // Two requests in one write: two answers, in order.
  REQUIRE(c.send(
      "GET /id/a?format=text HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto first = c.read_reply();
  const auto second = c.read_reply();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->status == 200);
  CHECK(std::stoull(first->body) > 0);
  CHECK(second->status == 200);
  // The last answer says close, and the connection ends after it.
  const auto last = c.request("/health", "Connection: close\r\n");
  REQUIRE(last);
  CHECK_FALSE(last->keep_alive);
  CHECK_FALSE(c.request("/health").has_value());

  // Connected, but no handshake: closed after request_timeout.
  HttpConnection silent(d.port());
  CHECK(silent.closed_by_server(5s));
}

TEST_CASE(
    "tls: SIGTERM over TLS: replies close their connections during the shutdown delay, then "
    "idle, mid-handshake and lingering connections end without waiting for drain_timeout",
    "[tls][signals]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  Daemon d(
      tls_config(server, {{"shutdown_delay_ms", 60'000}, {"drain_timeout_ms", 30'000}}).dump());

  TlsConnection busy(d.port(), {.ca_file = ca.cert});
  REQUIRE(busy.request("/health"));
  TlsConnection idle(d.port(), {.ca_file = ca.cert});
  REQUIRE(idle.request("/health"));

  d.process().send_signal(SIGTERM);
  CHECK(eventually([&] {
    TlsConnection probe(d.port(), {.ca_file = ca.cert});
    const auto r = probe.request("/ready");
    return r && r->status == 503;
  }));
  // The delay: still answered, each answer ending its connection.
  const auto during = busy.request("/id/a");
  REQUIRE(during);
  CHECK(during->status == 200);
  CHECK_FALSE(during->keep_alive);
  CHECK_FALSE(busy.request("/health").has_value());
  // Its last answer read, then silent: never a close_notify, never a close.
  TlsConnection lingering(d.port(), {.ca_file = ca.cert});
  REQUIRE(lingering.request("/health"));
  HttpConnection no_handshake(d.port());

  // A second SIGTERM ends the delay: the drain must not wait for any of them.
  const auto sent = std::chrono::steady_clock::now();
  d.process().send_signal(SIGTERM);
  const auto status = d.process().wait_for_exit(20s);
  REQUIRE(status);
  CHECK(status->code == 0);
  CHECK(std::chrono::steady_clock::now() - sent < 5s);
  CHECK_FALSE(idle.request("/health").has_value());
}

TEST_CASE(
    "tls: the admin listener with admin_client_ca_file takes only clients whose certificate that "
    "CA issued",
    "[tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto clients_ca = certs.make_ca("clients-ca");
  const auto other_ca = certs.make_ca("other-ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  const auto operator_cert = certs.make_client("operator", clients_ca);
  const auto stranger = certs.make_client("stranger", other_ca);
  Daemon d(tls_config(server, {{"admin_listen", "127.0.0.1:0"},
                               {"admin_client_ca_file", clients_ca.cert.string()}})
               .dump());
  const auto admin = admin_port(d);

  TlsConnection none(admin, {.ca_file = ca.cert});
  CHECK_FALSE(none.request("/status").has_value());
  TlsConnection wrong(admin, {.ca_file = ca.cert, .client = stranger});
  CHECK_FALSE(wrong.request("/status").has_value());
  TlsConnection right(admin, {.ca_file = ca.cert, .client = operator_cert});
  const auto status = right.request("/status");
  REQUIRE(status);
  CHECK(status->status == 200);
  // The admin listener's own table still applies: no IDs there.
  const auto id = right.request("/id/x");
  REQUIRE(id);
  CHECK(id->status == 404);
  // curl with the operator's certificate, as a runbook would use it.
  const auto curl =
      run_process({"/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                   ca.cert.string(), "--cert", operator_cert.cert.string(), "--key",
                   operator_cert.key.string(), https(admin) + "/metrics"});
  CHECK(curl.out == "200");
  const auto curl_without = run_process(
      {"/usr/bin/curl", "-sS", "--cacert", ca.cert.string(), https(admin) + "/metrics"});
  CHECK(curl_without.status.code != 0);

  // The main listener asks nobody for a certificate, and keeps its routes
  // (the operators' are on the admin listener: not here).
  TlsConnection main(d.port(), {.ca_file = ca.cert});
  const auto issued = main.request("/id/x");
  REQUIRE(issued);
  CHECK(issued->status == 200);
  const auto metrics = main.request("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 404);

  // Each client refused is counted, by listener: none, wrong, curl without.
  const auto failed_handshakes = [&](const std::string& listener) {
    TlsConnection reader(admin, {.ca_file = ca.cert, .client = operator_cert});
    const auto scrape = reader.request("/metrics");
    const std::string series =
        "\nsnowflake_tls_handshake_failures_total{listener=\"" + listener + "\"} ";
    const auto at = scrape ? scrape->body.find(series) : std::string::npos;
    return at == std::string::npos ? -1.0 : std::stod(scrape->body.substr(at + series.size()));
  };
  CHECK(eventually([&] { return failed_handshakes("admin") == 3; }));
  CHECK(failed_handshakes("main") == 0);
}

TEST_CASE(
    "tls: a certificate rotated by a swapped directory link, then by rename, is served to new "
    "connections while an open keep-alive connection keeps working",
    "[tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto first = certs.make_server("first", ca, 0x1001, 30);
  const auto second = certs.make_server("second", ca, 0x1002, 60);
  const auto third = certs.make_server("third", ca, 0x1003, 90);

  // A Kubernetes secret volume: tls.crt -> ..data/tls.crt, ..data -> ..v1.
  const fs::path volume = dir.path() / "secret";
  fs::create_directories(volume / "..v1");
  copy_over(first.cert, volume / "..v1" / "tls.crt");
  copy_over(first.key, volume / "..v1" / "tls.key");
  fs::create_directory_symlink("..v1", volume / "..data");
  fs::create_symlink("..data/tls.crt", volume / "tls.crt");
  fs::create_symlink("..data/tls.key", volume / "tls.key");
  Daemon d(tls_config({volume / "tls.crt", volume / "tls.key"}, {{"tls_reload_interval_ms", 100}})
               .dump());

  TlsConnection kept(d.port(), {.ca_file = ca.cert});
  REQUIRE(kept.request("/id/a"));
  CHECK(kept.peer_serial() == "1001");
  const double first_expiry =
      tls_metric(d.port(), ca.cert, "snowflake_tls_cert_expiry_timestamp_seconds");
  CHECK(first_expiry > 0);
  // Its whole life: made by the test just now, valid from then to its end.
  const double first_start =
      tls_metric(d.port(), ca.cert, "snowflake_tls_cert_not_before_timestamp_seconds");
  const double now_s = static_cast<double>(std::time(nullptr));
  CHECK(first_start > now_s - 3600);
  CHECK(first_start <= now_s + 60);
  CHECK(first_expiry > first_start);

  // The kubelet's update: a new directory, the link to it swapped in one rename.
  fs::create_directories(volume / "..v2");
  copy_over(second.cert, volume / "..v2" / "tls.crt");
  copy_over(second.key, volume / "..v2" / "tls.key");
  fs::create_directory_symlink("..v2", volume / "..data_tmp");
  fs::rename(volume / "..data_tmp", volume / "..data");
  fs::remove_all(volume / "..v1");
  CHECK(eventually([&] { return serves(d.port(), ca.cert, "1002"); }));
  const auto during = kept.request("/id/a");
  REQUIRE(during);
  CHECK(during->status == 200);
  CHECK(kept.peer_serial() == "1001");
  CHECK(tls_metric(d.port(), ca.cert, kReloadsOk) == 1);
  CHECK(tls_metric(d.port(), ca.cert, "snowflake_tls_cert_expiry_timestamp_seconds") >
        first_expiry + 29 * 86'400);

  // Replaced by rename, the key and then the certificate: taken together
  // (the change settles for a look first), no failed reload between.
  const fs::path plain = dir.path() / "plain";
  fs::create_directories(plain);
  copy_over(second.cert, plain / "tls.crt");
  copy_over(second.key, plain / "tls.key");
  Daemon renamed(
      tls_config({plain / "tls.crt", plain / "tls.key"}, {{"tls_reload_interval_ms", 100}}).dump());
  TlsConnection kept_too(renamed.port(), {.ca_file = ca.cert});
  REQUIRE(kept_too.request("/id/a"));
  // Both written beside first, then the two renames back to back, as a
  // tool does: a look between them would see a settled change only if
  // they were a whole interval apart.
  copy_over(third.key, plain / "tls.key.next");
  copy_over(third.cert, plain / "tls.crt.next");
  fs::rename(plain / "tls.key.next", plain / "tls.key");
  fs::rename(plain / "tls.crt.next", plain / "tls.crt");
  CHECK(eventually([&] { return serves(renamed.port(), ca.cert, "1003"); }));
  const auto after = kept_too.request("/id/a");
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(kept_too.peer_serial() == "1002");
  CHECK(tls_metric(renamed.port(), ca.cert, kReloadsFailed) == 0);
  CHECK(tls_metric(renamed.port(), ca.cert, kReloadsOk) == 1);
}

TEST_CASE(
    "tls: a broken replacement (half-written, a key of another certificate) keeps the "
    "certificate served and counts a failed reload",
    "[tls]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto good = certs.make_server("good", ca, 0x1001);
  const auto other = certs.make_server("other", ca, 0x1002);
  const fs::path live = dir.path() / "live";
  fs::create_directories(live);
  copy_over(good.cert, live / "tls.crt");
  copy_over(good.key, live / "tls.key");
  Daemon d(
      tls_config({live / "tls.crt", live / "tls.key"}, {{"tls_reload_interval_ms", 100}}).dump());
  REQUIRE(tls_metric(d.port(), ca.cert, kReloadsFailed) == 0);
  REQUIRE(tls_metric(d.port(), ca.cert, kReloadFailing) == 0);

  // The certificate cut off halfway, as a copy caught mid-write leaves it.
  std::ifstream in(other.cert);
  const std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto half = dir.write("half.pem", pem.substr(0, pem.size() / 2));
  rename_over(half, live / "tls.crt");
  CHECK(eventually([&] { return tls_metric(d.port(), ca.cert, kReloadsFailed) == 1; }));
  CHECK(serves(d.port(), ca.cert, "1001"));
  CHECK(d.process().wait_for_stderr("http.tls_cert_file", 5s));

  // A whole certificate, but the key is still the old one's.
  rename_over(other.cert, live / "tls.crt");
  CHECK(eventually([&] { return tls_metric(d.port(), ca.cert, kReloadsFailed) == 2; }));
  CHECK(serves(d.port(), ca.cert, "1001"));
  CHECK(tls_metric(d.port(), ca.cert, kReloadsOk) == 0);
  // Refused at every look, counted once per change: the gauge the alert
  // reads says so for as long as it lasts.
  CHECK(tls_metric(d.port(), ca.cert, kReloadFailing) == 1);

  // Its key too: now served.
  rename_over(other.key, live / "tls.key");
  CHECK(eventually([&] { return serves(d.port(), ca.cert, "1002"); }));
  CHECK(tls_metric(d.port(), ca.cert, kReloadsOk) == 1);
  CHECK(tls_metric(d.port(), ca.cert, kReloadsFailed) == 2);
  CHECK(tls_metric(d.port(), ca.cert, kReloadFailing) == 0);

  // A certificate that has expired, with its key, in one swap of the
  // directory: clients would refuse it, so the valid one stays.
  const auto expired = certs.make_server("expired", ca, 0x1003, 30, true);
  const fs::path next = dir.path() / "next";
  fs::create_directories(next);
  copy_over(expired.cert, next / "tls.crt");
  copy_over(expired.key, next / "tls.key");
  fs::rename(next / "tls.crt", live / "tls.crt");
  fs::rename(next / "tls.key", live / "tls.key");
  CHECK(eventually([&] { return tls_metric(d.port(), ca.cert, kReloadsFailed) == 3; }));
  CHECK(serves(d.port(), ca.cert, "1002"));
  CHECK(d.process().wait_for_stderr("expired", 5s));
}

TEST_CASE(
    "tls: snowflaked get https:// with --cacert issues, and without the CA or against an expired "
    "certificate, it fails saying why",
    "[tls][get]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto other_ca = certs.make_ca("other-ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  const auto expired = certs.make_server("expired", ca, 0x1002, 30, true);
  Daemon d(tls_config(server).dump());

  const auto get = [](const std::string& servers, std::vector<std::string> more = {}) {
    std::vector<std::string> argv{snowflaked_binary(), "get", "--servers", servers,
                                  "--timeout",         "3000"};
    argv.insert(argv.end(), more.begin(), more.end());
    return run_process(argv);
  };
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    const auto ok = get(https(d.port(), host), {"--cacert", ca.cert.string(), "--count", "3"});
    INFO(host << ": " << ok.err);
    CHECK(ok.status.code == 0);
    CHECK(std::count(ok.out.begin(), ok.out.end(), '\n') == 3);
  }
  const auto by_env = run_process({"/usr/bin/env", "SNOWFLAKED_CACERT=" + ca.cert.string(),
                                   snowflaked_binary(), "get", "--servers", https(d.port())});
  CHECK(by_env.status.code == 0);

  const auto system_cas = get(https(d.port()));
  CHECK(system_cas.status.code == 1);
  CHECK_THAT(system_cas.err, Catch::Contains("not trusted") &&
                                 Catch::Contains("unable to get local issuer certificate"));
  const auto wrong_ca = get(https(d.port()), {"--cacert", other_ca.cert.string()});
  CHECK(wrong_ca.status.code == 1);
  CHECK_THAT(wrong_ca.err, Catch::Contains("not trusted"));
  const auto no_file = get(https(d.port()), {"--cacert", (dir.path() / "missing.pem").string()});
  CHECK(no_file.status.code == 2);
  CHECK_THAT(no_file.err, Catch::Contains("--cacert") && Catch::Contains("missing.pem"));
  // https:// to a plain listener: a TLS error, not a hang.
  Daemon plain(json{{"coordinator", {{"type", "static"}, {"static_worker_id", 4}}}}.dump());
  const auto to_plain = get(https(plain.port()), {"--cacert", ca.cert.string()});
  CHECK(to_plain.status.code == 1);
  CHECK_THAT(to_plain.err, Catch::Contains("TLS"));

  Daemon stale(tls_config(expired).dump());
  CHECK(stale.process().wait_for_stderr("expired", 5s));
  const auto to_stale = get(https(stale.port()), {"--cacert", ca.cert.string()});
  CHECK(to_stale.status.code == 1);
  CHECK_THAT(to_stale.err, Catch::Contains("certificate has expired"));
}

TEST_CASE("tls: a bad TLS config exits 2 naming the key", "[tls][config]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  const auto other = certs.make_server("other", ca, 0x1002);
  const auto garbage = dir.write("garbage.pem", "not a certificate\n");
  const json base = {{"coordinator", {{"type", "static"}, {"static_worker_id", 3}}}};

  struct Case {
    json http;
    std::string key;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"tls_cert_file", server.cert.string()}}, "http.tls_key_file", "is required"},
      {{{"tls_key_file", server.key.string()}}, "http.tls_cert_file", "is required"},
      {{{"tls_cert_file", server.cert.string()}, {"tls_key_file", other.key.string()}},
       "http.tls_key_file",
       "is not the key of the certificate"},
      {{{"tls_cert_file", (dir.path() / "missing.pem").string()},
        {"tls_key_file", server.key.string()}},
       "http.tls_cert_file",
       "cannot open"},
      {{{"tls_cert_file", dir.path().string()}, {"tls_key_file", server.key.string()}},
       "http.tls_cert_file",
       "not a regular file"},
      {{{"tls_cert_file", garbage.string()}, {"tls_key_file", server.key.string()}},
       "http.tls_cert_file",
       "holds no PEM certificate"},
      {{{"tls_cert_file", server.cert.string()}, {"tls_key_file", garbage.string()}},
       "http.tls_key_file",
       "holds no PEM private key"},
      {{{"admin_listen", "127.0.0.1:0"}, {"admin_client_ca_file", ca.cert.string()}},
       "http.admin_client_ca_file",
       "needs TLS"},
      {{{"tls_cert_file", server.cert.string()},
        {"tls_key_file", server.key.string()},
        {"admin_client_ca_file", ca.cert.string()}},
       "http.admin_client_ca_file",
       "needs http.admin_listen"},
      {{{"tls_cert_file", server.cert.string()},
        {"tls_key_file", server.key.string()},
        {"admin_listen", "127.0.0.1:0"},
        {"admin_client_ca_file", garbage.string()}},
       "http.admin_client_ca_file",
       "holds no PEM certificate"},
  };
  for (const auto& c : cases) {
    json config = base;
    config["http"] = c.http;
    INFO(config.dump());
    const auto r = run_daemon_with(dir, config);
    INFO(r.err);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.key + ": ") && Catch::Contains(c.says));
  }
  // check-config finds the same, before any deployment.
  json config = base;
  config["http"] = cases[2].http;
  const auto path = dir.write("mismatch.json", config.dump());
  const auto check = run_process({snowflaked_binary(), "check-config", path.string()});
  CHECK(check.status.code == 2);
  CHECK_THAT(check.err, Catch::Contains("http.tls_key_file"));
}

TEST_CASE(
    "tls: a TLS daemon's scrape passes promtool check metrics and serves every snowflake_tls_ "
    "series the alert rules query",
    "[tls][monitoring]") {
  TempDir dir;
  const TestCertificates certs(dir.path());
  const auto ca = certs.make_ca("ca");
  const auto server = certs.make_server("server", ca, 0x1001);
  Daemon d(tls_config(server).dump());
  TlsConnection c(d.port(), {.ca_file = ca.cert});
  const auto scrape = c.request("/metrics");
  REQUIRE(scrape);
  const auto file = dir.write("scrape.txt", scrape->body);
  const auto check =
      run_process({"/bin/bash", "-c", "promtool check metrics < '" + file.string() + "'"});
  INFO(check.out << check.err);
  CHECK(check.status.code == 0);
  CHECK((check.out + check.err).empty());

  std::ifstream rules(std::string(SNOWFLAKE_SOURCE_DIR) + "/contrib/prometheus/alerts.yml");
  const std::string text((std::istreambuf_iterator<char>(rules)), std::istreambuf_iterator<char>());
  const std::regex metric("snowflake_tls_[a-z_]+");
  int queried = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), metric);
       it != std::sregex_iterator(); ++it, ++queried) {
    INFO(it->str());
    CHECK(std::regex_search(scrape->body, std::regex("\n" + it->str() + "[ {]")));
  }
  CHECK(queried >= 1);
  // The certificate's notAfter, as openssl reads it, in Unix seconds.
  const auto end = run_process({"/bin/bash", "-c",
                                "date -u +%s -d \"$(openssl x509 -in '" + server.cert.string() +
                                    "' -noout -enddate | cut -d= -f2)\""});
  REQUIRE(end.status.code == 0);
  CHECK(tls_metric(d.port(), ca.cert, "snowflake_tls_cert_expiry_timestamp_seconds") ==
        std::stod(end.out));
}
