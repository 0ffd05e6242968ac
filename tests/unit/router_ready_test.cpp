// GET /ready as load balancers probe it: for IDs (the default) or for
// sequences (?for=seq), and 503 stopping once SIGTERM came while requests
// are still answered (http.shutdown_delay_ms).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <string>

#include "router_fixture.hpp"
#include "snowflake/http/router.hpp"
#include "snowflake/sequences/registry.hpp"

using namespace snowflake;
using namespace snowflake::http;
using test::body_json;
using test::check_error;
using Fixture = test::RouterFixture;

namespace {

bool has_metric(Fixture& f, const std::string& line) {
  INFO(line);
  return f.get("/metrics").body().find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("/ready?for=: id by default, seq on request, anything else 400", "[router][ready]") {
  Fixture f;
  CHECK(body_json(f.get("/ready?for=id"))["worker_id"] == 9);
  check_error(f.get("/ready?for=uuid"), 400, "bad_for");
  check_error(f.get("/ready?for="), 400, "bad_for");
  check_error(f.get("/ready?for=id&for=seq"), 400, "bad_for");
  check_error(f.get("/ready?tag=order"), 400, "unknown_parameter");
  // A daemon without sequences is never ready for them.
  check_error(f.get("/ready?for=seq"), 503, "sequences_disabled");
}

TEST_CASE(
    "/ready?for=seq: ready while a number can be handed out, from a buffer or from ZooKeeper, "
    "lease or none",
    "[router][ready][sequence]") {
  Fixture f;
  SequenceRegistry sequences(4);
  f.context.sequences = &sequences;
  SequenceEntry* order = sequences.add("order");

  // The tags not read yet: nothing is known to be servable.
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");
  sequences.listed = true;
  sequences.connected = true;
  const auto ready = body_json(f.get("/ready?for=seq"));
  CHECK(ready["ready"] == true);
  CHECK(ready["for"] == "seq");
  CHECK(ready["zookeeper"] == "connected");
  CHECK(ready["sequences"].contains("order"));

  // ZooKeeper away past the lease: IDs are refused, the buffer still serves.
  f.lease.revoke();
  sequences.connected = false;
  check_error(f.get("/ready"), 503, "not_ready");
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");  // nothing buffered
  order->buffer.add({100, 103});
  CHECK(f.get("/ready?for=seq").result_int() == 200);
  // Used up: not ready, whatever the supplier's gauge last said (it is not
  // refreshed while the supplier has no session).
  order->gauges.left = 3;
  CHECK(body_json(f.get("/seq/order?count=3"))["ids"].size() == 3);
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");
  // A frozen tag's buffer serves nobody.
  order->buffer.add({200, 300});
  CHECK(f.get("/ready?for=seq").result_int() == 200);
  order->frozen = true;
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");
  // Connected again: its only tag is still frozen.
  sequences.connected = true;
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");
  order->frozen = false;
  CHECK(f.get("/ready?for=seq").result_int() == 200);
}

TEST_CASE("/ready?for=seq while connected: exhausted or frozen tags alone are not servable",
          "[router][ready][sequence]") {
  Fixture f;
  SequenceRegistry sequences(4);
  f.context.sequences = &sequences;
  sequences.listed = true;
  sequences.connected = true;
  CHECK(f.get("/ready?for=seq").result_int() == 200);  // no tag yet: the first one will be
  SequenceEntry* gone = sequences.add("gone");
  gone->exhausted = true;
  check_error(f.get("/ready?for=seq"), 503, "sequence_unavailable");
  const auto status = body_json(f.get("/status"))["sequences"]["tags"]["gone"];
  CHECK(status["ready"] == false);
  sequences.add("order");
  CHECK(f.get("/ready?for=seq").result_int() == 200);
}

TEST_CASE("/ready once stopping: 503 stopping for both kinds, while IDs are still issued",
          "[router][ready]") {
  Fixture f;
  SequenceRegistry sequences(4);
  sequences.listed = true;
  sequences.connected = true;
  f.context.sequences = &sequences;
  std::atomic<bool> stopping{false};
  f.context.stopping = &stopping;
  CHECK(has_metric(f, "snowflake_stopping 0"));
  CHECK(ready_to_issue(f.context));

  stopping = true;
  check_error(f.get("/ready"), 503, "stopping");
  check_error(f.get("/ready?for=seq"), 503, "stopping");
  check_error(f.get("/ready?for=bad"), 400, "bad_for");  // a bad probe is still told so
  CHECK(f.get("/id/order").result_int() == 200);         // served until the delay ends
  CHECK(f.get("/health").result_int() == 200);           // alive: no restart wanted
  CHECK_FALSE(ready_to_issue(f.context));                // systemd's status says so too
  CHECK(state_line(f.context).starts_with("stopping"));
  CHECK(has_metric(f, "snowflake_stopping 1"));
  CHECK(has_metric(f, "snowflake_ready 0"));
  CHECK(has_metric(f, "snowflake_refusals_total{route=\"ready\",code=\"stopping\"} 2"));
}
