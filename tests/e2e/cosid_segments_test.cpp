// CosId's segment distributor, from the requests its
// ProxyIdSegmentDistributor and ProxyIdSegmentDistributorFactory send
// ("%s/segments/%s/%s?step=%s" as PATCH, "%s/segments/distributor/%s/%s?
// offset=%s&step=%s" as POST, each with an empty JSON body), over the real
// snowflaked and a real ZooKeeper: the answer is the segment's maximum as
// plain text, and CosId hands out (maximum - step, maximum].

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::optional<HttpReply> send(const Daemon& d, const std::string& method,
                              const std::string& target) {
  HttpConnection c(d.port());
  return c.request(target, method, "Content-Type: application/json; charset=utf-8\r\n");
}

// The segment's maximum, as CosId reads it (Long.parseLong of the body).
std::int64_t next_max(const Daemon& d, const std::string& ns, const std::string& name,
                      std::int64_t step) {
  const auto r = send(d, "PATCH", "/segments/" + ns + "/" + name + "?step=" + std::to_string(step));
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  CHECK(r->headers.at("content-type").find("text/plain") != std::string::npos);
  return std::stoll(r->body);
}

// A refusal in CosId's shape: its status and code.
std::pair<unsigned, std::string> refused(const std::optional<HttpReply>& r) {
  REQUIRE(r);
  INFO(r->body);
  const auto body = json::parse(r->body);
  CHECK(body.contains("msg"));
  return {r->status, body.value("code", "")};
}

// Adds [first, last] to `seen`; false if any of it was there.
bool add_all(std::set<std::int64_t>& seen, std::int64_t first, std::int64_t last) {
  for (std::int64_t n = first; n <= last; ++n) {
    if (!seen.insert(n).second) return false;
  }
  return true;
}

std::int64_t seq_number(const Daemon& d, const std::string& tag) {
  const auto r = http_get(d.port(), "/seq/" + tag);
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return std::stoll(json::parse(r->body)["id"].get<std::string>());
}

// The next number of `tag` from /seq, once `d` serves it (within 10 s).
std::int64_t number_once_served(const Daemon& d, const std::string& tag) {
  std::int64_t n = 0;
  REQUIRE(eventually(
      [&] {
        const auto r = http_get(d.port(), "/seq/" + tag);
        if (!r || r->status != 200) return false;
        n = std::stoll(json::parse(r->body)["id"].get<std::string>());
        return true;
      },
      10s));
  return n;
}

}  // namespace

TEST_CASE(
    "CosId's segments: each PATCH answers the maximum of exactly step numbers, none twice across "
    "two daemons and /seq, refusals in CosId's shape and a bad request changing nothing",
    "[sequence][cosid]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  Daemon a(cluster_config(zk.hosts(), "recycle", sa.path()).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", sb.path()).dump());
  wait_ready(a);
  wait_ready(b);

  // Before `seq create`: the factory's POST and a PATCH say how to make it.
  const std::string factory = "/segments/distributor/orders/invoice?offset=0&step=100";
  CHECK(refused(send(a, "POST", factory)) ==
        std::pair<unsigned, std::string>{404, "no_such_sequence"});
  CHECK(refused(send(a, "PATCH", "/segments/orders/invoice?step=100")) ==
        std::pair<unsigned, std::string>{404, "no_such_sequence"});
  REQUIRE(run_seq(a, {"create", "orders.invoice", "--start", "1", "--step", "10"}).status.code ==
          0);
  REQUIRE(eventually([&] { return send(a, "POST", factory)->status == 200; }, 10s));

  // The first segment of a fresh sequence: [1, 100]. A step below the
  // tag's own (--step 10 here: 5) is exactly that many too.
  std::set<std::int64_t> seen;
  const std::int64_t first = next_max(a, "orders", "invoice", 100);
  CHECK(first == 100);
  REQUIRE(add_all(seen, first - 99, first));
  const std::int64_t small = next_max(b, "orders", "invoice", 5);
  REQUIRE(add_all(seen, small - 4, small));

  // Bad requests: 400 in CosId's shape, and nothing taken.
  for (const std::string q : {"?step=0", "?step=-1", "?step=1000000001", "?step=abc", "?step=", "",
                              "?step=5&step=5", "?step=5&offset=3", "?step=99999999999999999999"}) {
    CHECK(refused(send(a, "PATCH", "/segments/orders/invoice" + q)) ==
          std::pair<unsigned, std::string>{400, "400"});
  }
  CHECK(next_max(a, "orders", "invoice", 1) > small);  // the next one follows on
  seen.insert(next_max(a, "orders", "invoice", 1));
  const auto get = send(a, "GET", "/segments/orders/invoice?step=5");
  CHECK(refused(get).first == 405);
  CHECK(get->headers.at("allow") == "PATCH");
  CHECK(refused(send(a, "PATCH", "/segments/orders?step=5")).first == 404);
  CHECK(refused(send(a, "PATCH", "/segments/orders/in%voice?step=5")).first == 404);

  // Segments from both daemons and numbers from /seq on both, mixed: none twice.
  for (int i = 0; i < 30; ++i) {
    const Daemon& d = i % 2 ? a : b;
    const std::int64_t step = 1 + (i * 37) % 200;
    const std::int64_t max = next_max(d, "orders", "invoice", step);
    INFO("segment " << i << ": (" << max - step << ", " << max << "]");
    REQUIRE(add_all(seen, max - step + 1, max));
    REQUIRE(seen.insert(seq_number(d, "orders.invoice")).second);
  }
  // The largest step: a billion numbers, answered at once.
  const std::int64_t big = next_max(b, "orders", "invoice", 1'000'000'000);
  CHECK(big - 1'000'000'000 >= *seen.rbegin());
  CHECK(next_max(a, "orders", "invoice", 1) > big);

  // Counted: /metrics per tag.
  const auto scraped = http_get(a.port(), "/metrics");
  REQUIRE(scraped);
  CHECK(scraped->body.find("snowflake_seq_segment_numbers_total{tag=\"orders.invoice\"}") !=
        std::string::npos);

  // A bounded sequence with 50 numbers: a step of 100 is refused and takes
  // nothing (410); 50 are then one segment, and no more is left.
  REQUIRE(run_seq(a, {"create", "orders.few", "--start", "1", "--max", "50", "--step", "1"})
              .status.code == 0);
  REQUIRE(eventually(
      [&] {
        return send(a, "POST", "/segments/distributor/orders/few?offset=0&step=1")->status == 200;
      },
      10s));
  CHECK(refused(send(a, "PATCH", "/segments/orders/few?step=100")) ==
        std::pair<unsigned, std::string>{410, "sequence_exhausted"});
  CHECK(next_max(a, "orders", "few", 50) == 50);
  CHECK(refused(send(b, "PATCH", "/segments/orders/few?step=1")) ==
        std::pair<unsigned, std::string>{410, "sequence_exhausted"});

  // A strict sequence is handed out by its owner, in order: never in segments.
  REQUIRE(
      run_seq(a, {"create", "orders.strict", "--start", "1", "--order", "strict"}).status.code ==
      0);
  REQUIRE(eventually(
      [&] {
        return send(a, "POST", "/segments/distributor/orders/strict?offset=0&step=1")->status ==
               200;
      },
      10s));
  CHECK(refused(send(a, "PATCH", "/segments/orders/strict?step=10")) ==
        std::pair<unsigned, std::string>{409, "not_segmentable"});
  stop(a);
  stop(b);
}

TEST_CASE(
    "CosId's segments: a clean stop gives back none of the numbers below a segment it handed "
    "out, so the next daemon starts past it",
    "[sequence][cosid]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  Daemon a(cluster_config(zk.hosts(), "recycle", sa.path()).dump());
  wait_ready(a);
  REQUIRE(run_seq(a, {"create", "orders.invoice", "--start", "1", "--step", "10"}).status.code ==
          0);
  // Its buffer's first range, then a segment above it, both this run's:
  // a give-back of the buffer's rest would move the counter below the segment.
  CHECK(number_once_served(a, "orders.invoice") == 1);
  const std::int64_t max = next_max(a, "orders", "invoice", 100);
  stop(a);

  Daemon b(cluster_config(zk.hosts(), "recycle", sb.path()).dump());
  wait_ready(b);
  const std::int64_t next = number_once_served(b, "orders.invoice");
  INFO("the segment was (" << max - 100 << ", " << max << "]");
  CHECK(next > max);
  stop(b);
}
