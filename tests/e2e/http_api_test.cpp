// The real snowflaked over real sockets: the API as a client sees it.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <optional>
#include <thread>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/id_fields.hpp"
#include "../support/polling.hpp"
#include "snowflake/base/time_format.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kStaticConfig = R"({"coordinator": {"static_worker_id": 77},
                                "http": {"io_threads": 2}})";

std::uint64_t id_of(const HttpReply& r) {
  return std::stoull(json::parse(r.body)["id"].get<std::string>());
}

}  // namespace

TEST_CASE("every endpoint answers over HTTP", "[http]") {
  Daemon d(kStaticConfig);
  const auto id = http_get(d.port(), "/id/order");
  REQUIRE(id);
  CHECK(id->status == 200);
  CHECK(id->headers.at("content-type") == "application/json");
  CHECK(json::parse(id->body)["tag"] == "order");

  const auto text = http_get(d.port(), "/id/order?format=text");
  REQUIRE(text);
  CHECK(text->body.back() == '\n');
  const auto decoded = http_get(d.port(), "/decode/" + text->body.substr(0, text->body.size() - 1));
  REQUIRE(decoded);
  CHECK(json::parse(decoded->body)["worker_id"] == 77);

  const auto batch = http_get(d.port(), "/id/order?count=100");
  REQUIRE(batch);
  CHECK(json::parse(batch->body)["ids"].size() == 100);

  CHECK(http_get(d.port(), "/health")->status == 200);
  CHECK(http_get(d.port(), "/ready")->status == 200);
  CHECK(json::parse(http_get(d.port(), "/status")->body)["worker_id"] == 77);
  const auto metrics = http_get(d.port(), "/metrics");
  CHECK_THAT(metrics->body, Catch::Contains("snowflake_ids_issued_total 102"));
  CHECK(http_get(d.port(), "/nope")->status == 404);
  HttpConnection c(d.port());
  const auto post = c.request("/id/x", "POST", "Content-Length: 0\r\n");
  REQUIRE(post);
  CHECK(post->status == 405);
  CHECK(post->headers.at("allow") == "GET, HEAD");
  const auto head = c.request("/ready", "HEAD");
  REQUIRE(head);
  CHECK(head->status == 200);
  // A probe's HEAD on /id takes no ID, and the connection goes on.
  for (int i = 0; i < 3; ++i) {
    const auto probe = c.request("/id/x?count=100", "HEAD");
    REQUIRE(probe);
    CHECK(probe->status == 200);
    CHECK(probe->body.empty());
    CHECK_FALSE(probe->headers.contains("content-length"));
  }
  const auto after = c.request("/metrics");
  REQUIRE(after);
  CHECK_THAT(after->body, Catch::Contains("snowflake_ids_issued_total 102"));
}

TEST_CASE("keep-alive: one connection serves many requests", "[http]") {
  Daemon d(kStaticConfig);
  HttpConnection c(d.port());
  std::uint64_t last = 0;
  for (int i = 0; i < 200; ++i) {
    const auto r = c.request("/id/ka");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    REQUIRE(r->keep_alive);
    const auto id = id_of(*r);
    REQUIRE(id > last);
    last = id;
  }
}

TEST_CASE("pipelined requests are answered in order", "[http]") {
  Daemon d(kStaticConfig);
  HttpConnection c(d.port());
  std::string burst;
  for (int i = 0; i < 20; ++i) {
    burst += (i % 2 ? "GET /id/p HTTP/1.1\r\nHost: x\r\n\r\n"
                    : "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  c.send(burst);
  std::uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    const auto r = c.read_reply();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    if (i % 2) {
      REQUIRE(id_of(*r) > last);
      last = id_of(*r);
    } else {
      REQUIRE(json::parse(r->body)["status"] == "ok");
    }
  }
}

TEST_CASE("HTTP/1.0: answered, then closed unless keep-alive is asked for", "[http]") {
  Daemon d(kStaticConfig);
  {
    HttpConnection c(d.port());
    c.send("GET /id/old HTTP/1.0\r\n\r\n");
    const auto r = c.read_reply();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(c.closed_by_server(5s));
  }
  HttpConnection c(d.port());
  c.send("GET /id/old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  REQUIRE(c.read_reply());
  c.send("GET /id/old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  const auto again = c.read_reply();
  REQUIRE(again);
  CHECK(again->status == 200);
}

TEST_CASE("10k IDs over parallel keep-alive connections: no duplicate", "[http]") {
  Daemon d(kStaticConfig);
  constexpr int kConnections = 8;
  constexpr int kPerConnection = 1250;  // mixing single IDs and batches of 5
  std::vector<std::vector<std::uint64_t>> got(kConnections);
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int c = 0; c < kConnections; ++c) {
    clients.emplace_back([&, c] {
      HttpConnection conn(d.port());
      while (got[c].size() < kPerConnection) {
        const bool batch = got[c].size() % 10 == 5;
        const auto r =
            conn.request(batch ? "/id/load?count=5&format=text" : "/id/load?format=text");
        if (!r || r->status != 200) {
          ++failures;
          return;
        }
        std::size_t pos = 0;
        while (pos < r->body.size()) {
          const auto nl = r->body.find('\n', pos);
          got[c].push_back(std::stoull(r->body.substr(pos, nl - pos)));
          pos = nl + 1;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  REQUIRE(failures == 0);
  std::vector<std::uint64_t> all;
  for (auto& ids : got) {
    REQUIRE(std::is_sorted(ids.begin(), ids.end()));  // each connection sees increasing IDs
    all.insert(all.end(), ids.begin(), ids.end());
  }
  REQUIRE(all.size() >= 10'000);
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

TEST_CASE("IPv6 loopback works too", "[http]") {
  Daemon d(kStaticConfig, "[::1]:0");
  const auto r = HttpConnection(d.port(), "::1").request("/id/six");
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("a port already in use: exit non-zero, saying so", "[http]") {
  Daemon first(kStaticConfig);
  TempDir dir;
  const auto config = write_daemon_config(dir, kStaticConfig);
  const auto r = run_process({SNOWFLAKED_PATH, "--config", config.string(), "--listen",
                              "127.0.0.1:" + std::to_string(first.port())});
  CHECK(r.status.code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(first.port())));
  CHECK_THAT(r.err, Catch::Contains("in use"));
}

TEST_CASE("SIGTERM during load: in-flight requests complete, exit 0", "[http]") {
  Daemon d(kStaticConfig);
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&] {
      while (!stop) {
        try {
          HttpConnection conn(d.port());
          while (!stop) {
            const auto r = conn.request("/id/drain?count=50");
            if (!r) break;  // closed by the drain: fine, a whole response or none
            if (r->status == 200 && json::parse(r->body)["ids"].size() == 50) {
              ++ok;
            } else {
              ++bad;
            }
          }
        } catch (const std::exception&) {
          // Connection refused once the listener is gone: wait for `stop`.
          std::this_thread::sleep_for(1ms);
        }
      }
    });
  }
  // Let load build up, bounded in time.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ok < 500 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  REQUIRE(ok >= 500);
  d.process().send_signal(SIGTERM);
  const auto status = d.process().wait_for_exit(15s);
  stop = true;
  for (auto& t : clients) t.join();
  REQUIRE(status);
  CHECK(status->code == 0);
  CHECK(bad == 0);
  const auto log = d.process().stderr_text();
  CHECK_THAT(log, Catch::Contains("received SIGTERM"));
  CHECK_THAT(log, Catch::Contains("stopped; high-water mark"));
}

namespace {

// A fresh connection's answer to `target`, or nullopt when the connection is
// refused (nothing listens any more).
std::optional<HttpReply> get_or_refused(unsigned short port, const std::string& target) {
  try {
    return http_get(port, target);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

TEST_CASE(
    "SIGTERM with http.shutdown_delay_ms: /ready 503 stopping at once, IDs still served (each "
    "reply closing its connection) until the delay ends, then no new connection, exit 0",
    "[http][signals]") {
  Daemon d(R"({"coordinator": {"static_worker_id": 77},
               "http": {"io_threads": 1, "shutdown_delay_ms": 5000}})");
  HttpConnection kept(d.port());  // a keep-alive client from before
  REQUIRE(kept.request("/id/order")->keep_alive);
  const auto sent = std::chrono::steady_clock::now();
  d.process().send_signal(SIGTERM);
  REQUIRE(eventually([&] { return http_get(d.port(), "/ready")->status == 503; }, 10s));
  CHECK(json::parse(http_get(d.port(), "/ready")->body)["error"] == "stopping");
  CHECK(json::parse(http_get(d.port(), "/ready?for=seq")->body)["error"] == "stopping");
  CHECK(http_get(d.port(), "/health")->status == 200);
  // The kept connection is answered once more, and told to go.
  const auto last = kept.request("/id/order");
  REQUIRE(last);
  CHECK(last->status == 200);
  CHECK_FALSE(last->keep_alive);
  CHECK(kept.closed_by_server(5s));
  // Requests pipelined behind one the server closes after: the first is
  // answered whole, the rest read and dropped until the client closes, or a
  // second at most (no reset that could destroy the answer unread).
  HttpConnection piped(d.port());
  std::string pipeline;
  for (int i = 0; i < 2000; ++i) pipeline += "GET /id/order HTTP/1.1\r\nHost: t\r\n\r\n";
  piped.send(pipeline);
  const auto first = piped.read_reply();
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK_FALSE(first->keep_alive);
  CHECK(piped.closed_by_server(5s));
  // Every request answered with an ID until nothing listens, and that not
  // before the delay.
  int served = 0;
  std::optional<std::chrono::steady_clock::time_point> refused_at;
  const auto deadline = sent + 20s;
  while (!refused_at && std::chrono::steady_clock::now() < deadline) {
    const auto r = get_or_refused(d.port(), "/id/order");
    if (!r) {
      refused_at = std::chrono::steady_clock::now();
    } else {
      INFO(r->body);
      REQUIRE(r->status == 200);
      ++served;
    }
  }
  REQUIRE(refused_at);
  CHECK(*refused_at - sent >= 5000ms);
  CHECK(served > 0);
  const auto status = d.process().wait_for_exit(15s);
  REQUIRE(status);
  CHECK(status->code == 0);
  CHECK_THAT(d.process().stderr_text(), Catch::Contains("requests are still served for 5000 ms"));
}

TEST_CASE("a second SIGTERM cuts the shutdown delay short", "[http][signals]") {
  Daemon d(R"({"coordinator": {"static_worker_id": 77},
               "http": {"shutdown_delay_ms": 600000}})");
  d.process().send_signal(SIGTERM);
  REQUIRE(eventually([&] { return http_get(d.port(), "/ready")->status == 503; }, 10s));
  CHECK(http_get(d.port(), "/id/order")->status == 200);  // still serving, for ten minutes
  d.process().send_signal(SIGTERM);
  const auto status = d.process().wait_for_exit(20s);
  REQUIRE(status);
  CHECK(status->code == 0);
  CHECK_THAT(d.process().stderr_text(), Catch::Contains("the shutdown delay is cut short"));
}

TEST_CASE("Leaf's routes: off by default, then Leaf's answers in the configured layout",
          "[leaf][http]") {
  Daemon off(R"({"coordinator":{"type":"static"}})");
  CHECK(http_get(off.port(), "/api/snowflake/get/order")->status == 404);
  CHECK(http_get(off.port(), "/decodeSnowflakeId?snowflakeId=1")->status == 404);

  Daemon leaf(
      R"({"layout": {"preset": "leaf"}, "coordinator": {"type": "static", "static_worker_id": 39},
                  "http": {"leaf_compat": true}})");
  const auto got = http_get(leaf.port(), "/api/snowflake/get/leaf-segment-test");
  REQUIRE(got->status == 200);
  CHECK(got->headers.at("content-type").starts_with("text/plain"));
  const std::uint64_t id = std::stoull(got->body);
  CHECK(std::to_string(id) == got->body);  // the bare number, nothing after it
  // Leaf's own formula (LeafMonitorController.decodeSnowflakeId).
  const auto decoded =
      json::parse(http_get(leaf.port(), "/decodeSnowflakeId?snowflakeId=" + got->body)->body);
  const std::int64_t ms = leaf_layout_time_ms(id);
  std::string time = snowflake::format_iso8601_ms(ms);
  time[10] = ' ';
  time.pop_back();
  CHECK(decoded == json{{"timestamp", std::to_string(ms) + "(" + time + ")"},
                        {"workerId", "39"},
                        {"sequenceId", std::to_string(default_layout_sequence(id))}});
  // Refusals are ours.
  CHECK(http_get(leaf.port(), "/decodeSnowflakeId?snowflakeId=abc")->status == 400);
  CHECK(http_get(leaf.port(), "/api/snowflake/get/a%20b")->status == 400);
  // Counted like every route.
  const auto metrics = http_get(leaf.port(), "/metrics")->body;
  CHECK_THAT(metrics, Catch::Contains("route=\"leaf_id\",code=\"200\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("route=\"leaf_decode\",code=\"200\"} 1"));
}
