// The router is a pure function: requests in, responses out, no sockets.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "router_fixture.hpp"
#include "snowflake/http/openapi_document.hpp"
#include "snowflake/http/router.hpp"

using namespace snowflake;
using namespace snowflake::http;
using namespace std::chrono_literals;
using boost::beast::http::field;
using boost::beast::http::verb;
using nlohmann::json;

using test::body_json;
using test::check_error;
using test::header;
using test::to_id;
using Fixture = test::RouterFixture;
constexpr std::int64_t kStart = test::kRouterStart;

TEST_CASE("GET /id/<tag>: one ID as JSON, the ID a decimal string", "[router]") {
  Fixture f;
  const auto r = f.get("/id/order");
  CHECK(r.result_int() == 200);
  CHECK(header(r, field::content_type) == "application/json");
  CHECK(header(r, field::cache_control) == "no-store");
  const auto j = body_json(r);
  CHECK(j["tag"] == "order");
  const auto decoded = f.layout.decompose(to_id(j["id"])).value();
  CHECK(decoded.worker_id == 9);
  CHECK(decoded.timestamp_ms == kStart);
  CHECK(f.get("/id/order").body() != r.body());
}

TEST_CASE("GET /openapi.yaml: the API's contract, as built in", "[router]") {
  Fixture f;
  const auto r = f.get("/openapi.yaml");
  CHECK(r.result_int() == 200);
  CHECK(header(r, field::content_type) == "application/yaml");
  CHECK(r.body() == openapi_document());
  CHECK(r.body().starts_with("openapi: 3.1.0\n"));
  CHECK(f.get("/openapi.yaml", {}, verb::post).result_int() == 405);
}

TEST_CASE("text format by ?format=text or Accept: text/plain", "[router]") {
  Fixture f;
  for (const auto& r :
       {f.get("/id/order?format=text"), f.get("/id/order", {{field::accept, "text/plain"}}),
        f.get("/id/order?format=text", {{field::accept, "application/json"}})}) {
    CHECK(r.result_int() == 200);
    CHECK(header(r, field::content_type) == "text/plain; charset=utf-8");
    REQUIRE(r.body().size() > 1);
    CHECK(r.body().back() == '\n');
    CHECK(r.body().find_first_not_of("0123456789") == r.body().size() - 1);
  }
  for (const char* accept : {"*/*", "application/json", "text/plain, application/json"}) {
    CHECK(header(f.get("/id/order", {{field::accept, accept}}), field::content_type) ==
          "application/json");
  }
  CHECK(header(f.get("/id/order?format=json", {{field::accept, "text/plain"}}),
               field::content_type) == "application/json");
}

TEST_CASE("?count=N: N strictly increasing IDs, JSON list or one per line", "[router]") {
  Fixture f;
  const auto j = body_json(f.get("/id/batch?count=5"));
  CHECK(j["tag"] == "batch");
  REQUIRE(j["ids"].size() == 5);
  for (std::size_t i = 1; i < 5; ++i) CHECK(to_id(j["ids"][i]) > to_id(j["ids"][i - 1]));
  CHECK(body_json(f.get("/id/batch?count=1"))["ids"].size() == 1);  // a list even of one

  const auto text = f.get("/id/batch?count=3&format=text").body();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);

  const auto max = body_json(f.get("/id/batch?count=10000"));
  CHECK(max["ids"].size() == 10000);
  CHECK(f.metrics.render({}).find("snowflake_ids_issued_total 10009") != std::string::npos);
}

TEST_CASE("bad count, format or parameters: 400 with a stable code, nothing issued", "[router]") {
  Fixture f;
  for (const char* q :
       {"count=0", "count=-1", "count=10001", "count=99999999999999999999", "count=abc",
        "count=", "count", "count=1.5", "count=%35", "count=+5", "count=5&count=5"}) {
    INFO(q);
    check_error(f.get(std::string("/id/order?") + q), 400, "bad_count");
  }
  check_error(f.get("/id/order?format=xml"), 400, "bad_format");
  check_error(f.get("/id/order?format=text&format=text"), 400, "bad_format");
  check_error(f.get("/id/order?cout=5"), 400, "unknown_parameter");
  CHECK(f.generator->high_water_mark_ms() < kStart);  // no ID was issued
}

TEST_CASE("bad tags: 400 bad_tag", "[router]") {
  Fixture f;
  for (const std::string& tag :
       {std::string(""), std::string(65, 'a'), std::string("a/b"), std::string("a%20b"),
        std::string("\xc3\xa4"), std::string("a:b")}) {
    INFO(tag);
    check_error(f.get("/id/" + tag), 400, "bad_tag");
  }
  CHECK(f.get("/id/" + std::string(64, 'a')).result_int() == 200);
  CHECK(f.get("/id/A-z_0.9").result_int() == 200);
}

TEST_CASE("a tag allowlist turns other tags into 404 unknown_tag", "[router]") {
  HttpSettings s;
  s.tag_allowlist = {"order", "user"};
  Fixture f(s);
  CHECK(f.get("/id/order").result_int() == 200);
  check_error(f.get("/id/invoice"), 404, "unknown_tag");
  check_error(f.get("/id/in%20voice"), 400, "bad_tag");  // still a bad tag first
}

TEST_CASE("no lease: 503 not_ready or lease_expired with Retry-After", "[router]") {
  Fixture f;
  f.lease.revoke();
  auto r = f.get("/id/order");
  check_error(r, 503, "not_ready");
  CHECK(header(r, field::retry_after) == "1");
  check_error(f.get("/ready"), 503, "not_ready");

  f.lease.extend_until(f.clock.monotonic() + 100ms);
  CHECK(f.get("/id/order").result_int() == 200);
  CHECK(body_json(f.get("/status"))["lease"]["remaining_ms"] == 100);
  f.clock.advance(100ms);
  r = f.get("/id/order");
  check_error(r, 503, "lease_expired");
  CHECK(header(r, field::retry_after) == "1");
  check_error(f.get("/ready"), 503, "lease_expired");
  CHECK(f.get("/health").result_int() == 200);  // alive all the same
}

TEST_CASE("an expired lease under the cluster's fence: 503 cluster_fenced until the fence ends",
          "[router]") {
  Fixture f;
  f.lease.extend_until(f.clock.monotonic() + 100ms);
  f.clock.advance(100ms);
  check_error(f.get("/id/order"), 503, "lease_expired");
  // The fence is judged by the wall clock the coordinator reads it with.
  const std::int64_t until = SystemClock::instance().wall_ms() + 60'000;
  f.gauges.fence_until_ms.store(until);
  f.gauges.fence_kind.store(FenceGauge::history_lost);
  const auto r = f.get("/id/order");
  check_error(r, 503, "cluster_fenced");
  CHECK(std::stoi(header(r, field::retry_after)) >= 59);
  check_error(f.get("/ready"), 503, "cluster_fenced");
  f.gauges.fence_until_ms.store(SystemClock::instance().wall_ms() - 1);  // passed
  check_error(f.get("/id/order"), 503, "lease_expired");
}

TEST_CASE("a clock step back: 503 clock_moved_backwards, Retry-After covers the gap", "[router]") {
  Fixture f;
  REQUIRE(f.get("/id/order").result_int() == 200);
  f.clock.set_wall_ms(kStart - 10'000);
  const auto r = f.get("/id/order");
  check_error(r, 503, "clock_moved_backwards");
  CHECK(header(r, field::retry_after) == "10");
  check_error(f.get("/ready"), 503, "clock_moved_backwards");
  f.clock.set_wall_ms(kStart);
  CHECK(f.get("/ready").result_int() == 200);
  CHECK(f.metrics.render({f.generator->stats(), LeaseState::valid, 9, true, "v", "r", "svc"})
            .find("snowflake_clock_backward_refusals_total 1") != std::string::npos);
}

TEST_CASE("GET /decode/<id>", "[router]") {
  Fixture f;
  const auto j = body_json(f.get("/decode/4194308101"));
  CHECK(j["id"] == "4194308101");
  CHECK(j["time"] == "2025-01-01T00:00:01.000Z");
  CHECK(j["timestamp_ms"] == kDefaultEpochMs + 1000);
  CHECK(j["worker_id"] == 1);
  CHECK(j["sequence"] == 5);
  for (const char* bad : {"/decode/", "/decode/abc", "/decode/-1", "/decode/9223372036854775808"}) {
    INFO(bad);
    check_error(f.get(bad), 400, "bad_id");
  }
}

TEST_CASE("/health, /ready, /status", "[router]") {
  Fixture f;
  CHECK(body_json(f.get("/health"))["status"] == "ok");
  const auto ready = body_json(f.get("/ready"));
  CHECK(ready["ready"] == true);
  CHECK(ready["worker_id"] == 9);
  const auto s = body_json(f.get("/status"));
  CHECK(s["service"] == "svc");
  CHECK(s["mode"] == "static");
  CHECK(s["worker_id"] == 9);
  CHECK(s["lease"]["state"] == "valid");
  CHECK(s["lease"]["remaining_ms"].is_null());
  CHECK(s["layout"]["sequence_bits"] == 12);
  CHECK(s["layout"]["end_of_life"] == "2094-09-07T15:47:35.552Z");
  CHECK(s["version"].is_string());
  CHECK(s["io_threads"] == 2);
}

TEST_CASE("/health: 503 unhealthy with the check's reason, while /ready may still be 200",
          "[router][health]") {
  Fixture f;
  f.liveness.record("the heartbeat thread has been in one step for over 4000 ms", 4000ms, 1000ms,
                    Liveness::Clock::now());
  const auto sick = f.get("/health");
  check_error(sick, 503, "unhealthy");
  CHECK(body_json(sick)["message"] == "the heartbeat thread has been in one step for over 4000 ms");
  CHECK(f.get("/ready").result_int() == 200);  // it may still issue: liveness is not readiness
  f.liveness.record(std::nullopt, 4000ms, 1000ms, Liveness::Clock::now());
  CHECK(f.get("/health").result_int() == 200);
}

TEST_CASE("/metrics: 503s by route and code, request durations by route, readiness, lease",
          "[router]") {
  Fixture f;
  auto has = [&](const std::string& line) {
    INFO(line);
    return f.get("/metrics").body().find(line + "\n") != std::string::npos;
  };
  CHECK(has("snowflake_lease_remaining_seconds +Inf"));  // static: the lease does not expire
  CHECK(has("snowflake_refusals_total{route=\"id\",code=\"lease_expired\"} 0"));
  CHECK(has("snowflake_ready 1"));
  CHECK(has("snowflake_worker_id 9"));
  f.lease.revoke();
  for (int i = 0; i < 3; ++i) check_error(f.get("/id/order"), 503, "not_ready");
  CHECK(f.get("/ready", {}, verb::head).result_int() == 503);  // HEAD counts too
  CHECK(has("snowflake_refusals_total{route=\"id\",code=\"not_ready\"} 3"));
  CHECK(has("snowflake_refusals_total{route=\"ready\",code=\"not_ready\"} 1"));
  CHECK(has("snowflake_ready 0"));
  CHECK(has("snowflake_lease_remaining_seconds 0"));
  // Every routed request is observed once, under its route: 3 of /id, 1 of
  // /ready, and the scrapes (a scrape is rendered before its own observation).
  const std::string body = f.get("/metrics").body();
  CHECK(body.find("snowflake_http_request_duration_seconds_count{route=\"id\"} 3\n") !=
        std::string::npos);
  CHECK(body.find(
            "snowflake_http_request_duration_seconds_bucket{route=\"ready\",le=\"+Inf\"} 1\n") !=
        std::string::npos);
  CHECK(body.find("snowflake_http_request_duration_seconds_count{route=\"metrics\"} 8\n") !=
        std::string::npos);
  // No series for a route never asked.
  CHECK(body.find("route=\"decode\"") == std::string::npos);
  // The process, as every Prometheus client library exports it.
  for (const char* name :
       {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
        "process_max_fds ", "process_start_time_seconds "}) {
    INFO(name);
    CHECK(body.find(std::string("\n") + name) != std::string::npos);
  }
}

TEST_CASE("/metrics: Prometheus text, per-tag series capped", "[router]") {
  Fixture f;  // cap of 3 tags
  for (const char* tag : {"a", "b", "c", "d", "e"})
    REQUIRE(f.get(std::string("/id/") + tag).result_int() == 200);
  f.get("/nope");
  f.get("/id/x%y");
  const auto r = f.get("/metrics");
  CHECK(r.result_int() == 200);
  CHECK(header(r, field::content_type) == "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = r.body();
  CHECK_THAT(m, Catch::Contains("snowflake_http_requests_total{route=\"id\",code=\"200\"} 5"));
  CHECK_THAT(m, Catch::Contains("snowflake_http_requests_total{route=\"id\",code=\"400\"} 1"));
  CHECK_THAT(m, Catch::Contains("snowflake_http_requests_total{route=\"other\",code=\"404\"} 1"));
  CHECK_THAT(m, Catch::Contains("snowflake_tag_ids_issued_total{tag=\"a\"} 1"));
  CHECK_THAT(m, Catch::Contains("snowflake_tag_ids_issued_total{tag=\"c\"} 1"));
  CHECK_THAT(m, !Catch::Contains("tag=\"d\""));
  CHECK_THAT(m, Catch::Contains("snowflake_untracked_tag_ids_issued_total 2"));
  CHECK_THAT(m, Catch::Contains("snowflake_ids_issued_total 5"));
  CHECK_THAT(m, Catch::Contains("snowflake_lease_valid 1"));
  CHECK_THAT(m, Catch::Contains("snowflake_lease_state{state=\"valid\"} 1"));
  CHECK_THAT(m, Catch::Contains("snowflake_build_info{version="));
  CHECK_THAT(m, Catch::Contains("snowflake_sequence_waits_total 0"));
}

TEST_CASE("unknown paths 404, wrong methods 405 with Allow", "[router]") {
  Fixture f;
  for (const char* path : {"/", "/id", "/ids/x", "/health/", "/x\xff\xfe"}) {
    INFO(path);
    check_error(f.get(path), 404, "not_found");
  }
  for (verb m : {verb::post, verb::put, verb::delete_, verb::patch, verb::options}) {
    const auto r = f.get("/id/order", {}, m);
    check_error(r, 405, "method_not_allowed");
    CHECK(header(r, field::allow) == "GET, HEAD");
  }
  check_error(f.get("http://example.com/id/x"), 400, "bad_request");
  check_error(f.get("/id/" + std::string(3000, 'a')), 414, "uri_too_long");
}

TEST_CASE("HEAD: GET's headers, Content-Length included, no body", "[router]") {
  Fixture f;
  const auto get = f.get("/health");
  const auto head = f.get("/health", {}, verb::head);
  CHECK(head.result_int() == 200);
  CHECK(head.body().empty());
  CHECK(header(head, field::content_length) == std::to_string(get.body().size()));
  CHECK(f.get("/ready", {}, verb::head).result_int() == 200);
}

TEST_CASE(
    "HEAD on /id, /seq and Leaf's routes takes nothing: a GET's status and headers, no body, no "
    "Content-Length (a GET's depends on the numbers)",
    "[router][sequence]") {
  HttpSettings leaf;
  leaf.leaf_compat = true;
  Fixture f(leaf);
  SequenceRegistry sequences(4);
  sequences.listed = true;
  sequences.connected = true;
  sequences.add("invoice")->buffer.add({100, 110});
  sequences.add("dry");
  SequenceEntry* frozen = sequences.add("frozen");
  frozen->buffer.add({1, 5});
  frozen->frozen = true;
  f.context.sequences = &sequences;
  f.context.sequence_wait = 0ms;

  // The manual clock stands still: the next ID after a GET's is one more,
  // unless something took IDs between them.
  const auto first = std::stoull(body_json(f.get("/id/order"))["id"].get<std::string>());
  for (const char* target : {"/id/order", "/id/order?count=50", "/api/snowflake/get/order"}) {
    const auto head = f.get(target, {}, verb::head);
    CHECK(head.result_int() == 200);
    CHECK(head.body().empty());
    CHECK_FALSE(head.has_content_length());
    CHECK(header(head, field::cache_control) == "no-store");
  }
  CHECK(header(f.get("/id/order?format=text", {}, verb::head), field::content_type) ==
        "text/plain; charset=utf-8");
  CHECK(std::stoull(body_json(f.get("/id/order"))["id"].get<std::string>()) == first + 1);

  // A probe of a sequence, however often, leaves the next number to a GET.
  for (int i = 0; i < 5; ++i) {
    const auto head = f.get("/seq/invoice", {}, verb::head);
    CHECK(head.result_int() == 200);
    CHECK(head.body().empty());
    CHECK_FALSE(head.has_content_length());
    CHECK(f.get("/api/segment/get/invoice", {}, verb::head).result_int() == 200);
  }
  CHECK(body_json(f.get("/seq/invoice"))["id"] == "100");
  CHECK(sequences.find("invoice")->gauges.handed_out.load() == 1);
  // A dry tag with ZooKeeper there: a GET would wait for a range: 200.
  CHECK(f.get("/seq/dry", {}, verb::head).result_int() == 200);
  // The refusals a GET would get, with their headers (the body left out).
  const auto refused = f.get("/seq/frozen", {}, verb::head);
  CHECK(refused.result_int() == 503);
  CHECK(refused.body().empty());
  CHECK(header(refused, field::retry_after) != "");
  CHECK(f.get("/seq/nope", {}, verb::head).result_int() == 404);
  CHECK(frozen->buffer.state().current_left + frozen->buffer.state().queued == 4);
  sequences.connected = false;
  CHECK(f.get("/seq/dry", {}, verb::head).result_int() == 503);
  f.lease.revoke();
  CHECK(f.get("/id/order", {}, verb::head).result_int() == 503);
}

TEST_CASE("responses follow the request's version and keep-alive", "[router]") {
  Fixture f;
  const auto r11 = f.get("/health");
  CHECK(r11.version() == 11);
  CHECK(r11.keep_alive());
  CHECK_FALSE(f.get("/health", {{field::connection, "close"}}).keep_alive());
  const auto r10 = f.get("/health", {}, verb::get, 10);
  CHECK(r10.version() == 10);
  CHECK_FALSE(r10.keep_alive());
  CHECK(f.get("/health", {{field::connection, "keep-alive"}}, verb::get, 10).keep_alive());
}

TEST_CASE("reject_request: the error, closing, counted", "[router]") {
  Fixture f;
  const auto r = reject_request(Status::request_header_fields_too_large, "headers_too_large",
                                "too big", f.context);
  check_error(r, 431, "headers_too_large");
  CHECK_FALSE(r.keep_alive());
  CHECK_THAT(f.get("/metrics").body(),
             Catch::Contains("snowflake_http_requests_total{route=\"other\",code=\"431\"} 1"));
}

TEST_CASE("no worker ID yet: 503 not_ready, /status says so, decode still works", "[router]") {
  Fixture f;
  f.worker.clear();
  check_error(f.get("/id/x"), 503, "not_ready");
  check_error(f.get("/ready"), 503, "not_ready");
  f.gauges.pool_exhausted = true;
  const auto r = f.get("/id/x");
  check_error(r, 503, "not_ready");
  CHECK_THAT(r.body(), Catch::Contains("pool"));
  const auto s = body_json(f.get("/status"));
  CHECK(s["worker_id"].is_null());
  CHECK(s["coordination"]["pool_exhausted"] == true);
  CHECK(f.get("/decode/12345").result_int() == 200);
  // No worker ID: no snowflake_worker_id series, and build_info unchanged.
  const auto metrics = f.get("/metrics").body();
  CHECK_THAT(metrics, !Catch::Contains("\nsnowflake_worker_id ") &&
                          Catch::Contains("snowflake_build_info{version=") &&
                          !Catch::Contains("worker_id=\""));
}

TEST_CASE("clock skew against ZooKeeper: 503 clock_skew until it recovers", "[router]") {
  Fixture f;
  f.gauges.clock_skew_ms = 4321;
  f.lease.hold_for_clock_skew(true);
  const auto r = f.get("/id/x");
  check_error(r, 503, "clock_skew");
  CHECK_THAT(r.body(), Catch::Contains("4321 ms"));
  CHECK(r[field::retry_after] == "1");
  check_error(f.get("/ready"), 503, "clock_skew");
  f.lease.hold_for_clock_skew(false);
  CHECK(f.get("/id/x").result_int() == 200);
}

TEST_CASE("a generator past its reserved time refuses with time_not_reserved", "[router]") {
  Fixture f;
  f.generator->set_reservation_ms(kStart - 1000);
  check_error(f.get("/id/x"), 503, "time_not_reserved");
  f.generator->set_reservation_ms(kStart + 1000);
  CHECK(f.get("/id/x").result_int() == 200);
  f.generator->close();
  f.clock.advance(std::chrono::milliseconds(1));
  check_error(f.get("/id/x"), 503, "time_not_reserved");
}

TEST_CASE(
    "the lease is final: a request that passed it and then waited for the next unit is refused",
    "[router][safety]") {
  // 100 ms units of 4 IDs: the fifth ID of a unit waits for the next one.
  test::ManualClock clock{kStart};
  const IdLayout layout =
      IdLayout::create(
          {.time_bits = 51, .worker_bits = 10, .sequence_bits = 2, .time_unit_ms = 100}, kStart)
          .value();
  WorkerSlot worker;
  IdGenerator& generator = worker.install(IdGenerator::create(layout, 1, {}, clock).value());
  Lease lease{clock};
  // The deadline falls before the next unit starts.
  lease.extend_until(clock.monotonic() + 50ms);
  CoordinationGauges gauges;
  Liveness liveness;
  Metrics metrics{3};
  HttpSettings settings;
  RouterContext ctx{
      layout,   worker,  lease,    gauges,
      liveness, metrics, settings, {"svc", CoordinatorType::recycle, clock.monotonic(), 1}};
  const auto get = [&](const std::string& target) {
    return answer_at_once(handle_request(Request{verb::get, target, 11}, ctx));
  };
  REQUIRE(get("/id/x?count=4").result_int() == 200);
  const auto refused = get("/id/x");
  check_error(refused, 503, "lease_expired");
  CHECK(clock.slept() > 50ms);                     // it did wait, past the deadline
  CHECK(generator.high_water_mark_ms() > kStart);  // the IDs it took are dropped, never sent
}

TEST_CASE("GET /seq/<tag>: numbers from the tag's ranges, increasing, in the shapes of /id",
          "[router][sequence]") {
  HttpSettings leaf;
  leaf.leaf_compat = true;
  Fixture f(leaf);
  SequenceRegistry sequences(4);
  sequences.add("invoice")->buffer.add({100, 110});
  sequences.add("dry");
  f.context.sequences = &sequences;
  f.context.sequence_wait = 0ms;

  const auto one = f.get("/seq/invoice");
  CHECK(one.result_int() == 200);
  CHECK(body_json(one) == json{{"id", "100"}, {"tag", "invoice"}});
  CHECK(body_json(f.get("/seq/invoice?count=3"))["ids"] == json{"101", "102", "103"});
  CHECK(f.get("/seq/invoice?count=2&format=text").body() == "104\n105\n");
  CHECK(f.get("/api/segment/get/invoice").body() == "106");
  CHECK(sequences.find("invoice")->gauges.handed_out.load() == 7);

  // Before the tags were read from ZooKeeper, a tag not known may exist.
  const auto early = f.get("/seq/nope");
  check_error(early, 503, "sequence_unavailable");
  CHECK(header(early, field::retry_after) == "1");
  sequences.listed = true;
  check_error(f.get("/seq/nope"), 404, "unknown_sequence");
  check_error(f.get("/seq/b@d"), 400, "bad_tag");
  check_error(f.get("/seq/invoice?count=0"), 400, "bad_count");
  // Nothing buffered and nothing to come: 503 with Retry-After, and the
  // supplier was asked for a range.
  const auto dry = f.get("/seq/dry");
  check_error(dry, 503, "sequence_unavailable");
  CHECK(header(dry, field::retry_after) == "1");
  CHECK(sequences.find("dry")->wanted.load());
  // A batch larger than what is left: refused whole, the rest a gap.
  check_error(f.get("/seq/invoice?count=5"), 503, "sequence_unavailable");
  check_error(f.get("/seq/invoice"), 503, "sequence_unavailable");

  // Sequences need no lease: served while IDs are refused.
  sequences.find("invoice")->buffer.add({200, 210});
  f.lease.revoke();
  CHECK(f.get("/id/order").result_int() == 503);
  CHECK(body_json(f.get("/seq/invoice"))["id"] == "200");
  CHECK(body_json(f.get("/status"))["sequences"]["tags"].contains("invoice"));
}

TEST_CASE(
    "GET /seq/<tag> of a dry tag waits without blocking: the answer comes when a range is added, "
    "whole, with the numbers taken before the wait",
    "[router][sequence]") {
  Fixture f;
  SequenceRegistry sequences(4);
  sequences.listed = true;
  sequences.connected = true;
  SequenceEntry* order = sequences.add("order");
  order->buffer.add({100, 103});
  f.context.sequences = &sequences;
  f.context.sequence_wait = 60s;

  // Three buffered, five asked: a wait, not a blocked thread.
  Answer answer = handle_request(Request{verb::get, "/seq/order?count=5", 11}, f.context);
  REQUIRE(std::holds_alternative<Wait>(answer));
  Wait& wait = std::get<Wait>(answer);
  CHECK(order->wanted.load());  // the supplier was asked
  CHECK_FALSE(wait.retry(false));
  // What a waiting reply holds counts as in flight: a raise's drop waits.
  order->replies.begin_drain();
  CHECK_FALSE(order->replies.drained());
  int woken = 0;
  const auto wake = std::make_shared<const Wake>([&woken] { ++woken; });
  wait.subscribe(wake);
  order->buffer.add({200, 210});
  order->waiting.wake_all();
  CHECK(woken == 1);
  auto reply = wait.retry(false);
  REQUIRE(reply);
  CHECK(reply->response.result_int() == 200);
  // The three taken before the wait, then two of the new range: no gap.
  CHECK(body_json(reply->response)["ids"] == json{"100", "101", "102", "200", "201"});
  CHECK(order->gauges.handed_out.load() == 5);
  CHECK_FALSE(order->replies.drained());  // until written
  reply->in_flight.reset();
  CHECK(order->replies.drained());
  // Woken once: a subscription is spent by its wake.
  order->waiting.wake_all();
  CHECK(woken == 1);
}

TEST_CASE(
    "GET /seq/<tag> of a dry tag with ZooKeeper away, or at its deadline: 503 at once, and the "
    "numbers taken for it are dropped, not counted as handed out",
    "[router][sequence]") {
  Fixture f;
  SequenceRegistry sequences(4);
  sequences.listed = true;
  SequenceEntry* order = sequences.add("order");
  order->buffer.add({100, 102});
  f.context.sequences = &sequences;
  f.context.sequence_wait = 60s;

  // ZooKeeper away: no range can come, so no wait either.
  Answer away = handle_request(Request{verb::get, "/seq/order?count=5", 11}, f.context);
  REQUIRE(std::holds_alternative<Reply>(away));
  check_error(std::get<Reply>(away).response, 503, "sequence_unavailable");
  CHECK(order->wanted.load());  // taken once it is back
  CHECK(order->gauges.handed_out.load() == 0);
  CHECK(order->gauges.dropped.load() == 2);

  // Connected, and no range by the deadline.
  sequences.connected = true;
  order->buffer.add({200, 202});
  Answer late = handle_request(Request{verb::get, "/seq/order?count=5", 11}, f.context);
  REQUIRE(std::holds_alternative<Wait>(late));
  auto last = std::get<Wait>(late).retry(true);
  REQUIRE(last);
  check_error(last->response, 503, "sequence_unavailable");
  CHECK(order->gauges.dropped.load() == 4);
  const auto metrics = f.get("/metrics").body();
  CHECK(metrics.find(R"(snowflake_refusals_total{route="seq",code="sequence_unavailable"} 2)") !=
        std::string::npos);
  CHECK(metrics.find(R"(snowflake_seq_numbers_dropped_total{tag="order"} 4)") != std::string::npos);
  // ZooKeeper lost while it waits: woken, and it answers at once.
  order->buffer.add({300, 301});
  Answer woken = handle_request(Request{verb::get, "/seq/order?count=5", 11}, f.context);
  REQUIRE(std::holds_alternative<Wait>(woken));
  sequences.connected = false;
  auto now = std::get<Wait>(woken).retry(false);
  REQUIRE(now);
  check_error(now->response, 503, "sequence_unavailable");
}

TEST_CASE(
    "GET /seq/<tag> of an exhausted tag: its buffer first, then 410 sequence_exhausted at once",
    "[router][sequence]") {
  HttpSettings leaf;
  leaf.leaf_compat = true;
  Fixture f(leaf);
  SequenceRegistry sequences(4);
  sequences.listed = true;
  SequenceEntry* top = sequences.add("top");
  top->buffer.add({INT64_MAX - 2, INT64_MAX});
  top->exhausted = true;
  f.context.sequences = &sequences;
  f.context.sequence_wait = 60s;  // never waited for: nothing will come

  CHECK(body_json(f.get("/seq/top"))["id"] == std::to_string(INT64_MAX - 2));
  CHECK(f.get("/api/segment/get/top").body() == std::to_string(INT64_MAX - 1));
  const auto gone = f.get("/seq/top");
  check_error(gone, 410, "sequence_exhausted");
  check_error(f.get("/api/segment/get/top"), 410, "sequence_exhausted");
  check_error(f.get("/seq/top?count=2"), 410, "sequence_exhausted");
  CHECK_FALSE(top->wanted.load());  // no range asked for
  const auto status = body_json(f.get("/status"))["sequences"]["tags"]["top"];
  CHECK(status["exhausted"] == true);
  CHECK(status["ready"] == false);
  CHECK(f.get("/metrics").body().find("snowflake_seq_exhausted{tag=\"top\"} 1") !=
        std::string::npos);
}

TEST_CASE("GET /seq/<tag> on a daemon without sequences: 404 that says so", "[router][sequence]") {
  Fixture f;
  check_error(f.get("/seq/invoice"), 404, "unknown_sequence");
  CHECK(body_json(f.get("/status"))["sequences"].is_null());
  CHECK_FALSE(body_json(f.get("/ready")).contains("sequences"));
  check_error(f.get("/api/segment/get/invoice"), 404, "not_found");  // no leaf_compat
}
