// Dense sequences through the real snowflaked: `seq create` and `seq list`,
// GET /seq/<tag> on two daemons (never a number twice, each one's
// increasing), a tag created while they run, Leaf's segment route, numbers
// served from the buffer with ZooKeeper stopped while snowflake IDs stop, a
// 503 (not a 404) from a daemon that has not read the tags yet,
// a clean stop that gives the unused rest back, and seq raise / seq forget.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <memory>
#include <set>

#include "../support/daemon.hpp"
#include "../support/fault_proxy.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::optional<std::int64_t> next_number(const Daemon& d, const std::string& tag) {
  const auto r = http_get(d.port(), "/seq/" + tag);
  if (!r || r->status != 200) return std::nullopt;
  return std::stoll(json::parse(r->body)["id"].get<std::string>());
}

}  // namespace

TEST_CASE("sequences: created, served by two daemons without a number twice, and listed",
          "[sequence]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  const json patch = {{"http", {{"leaf_compat", true}}}};
  Daemon a(cluster_config(zk.hosts(), "recycle", sa.path(), patch).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", sb.path(), patch).dump());
  wait_ready(a);
  wait_ready(b);

  // Unknown until created: 404 with its own code; a bad tag is a 400.
  const auto unknown = http_get(a.port(), "/seq/order");
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  CHECK(error_of(unknown) == "unknown_sequence");
  CHECK(http_get(a.port(), "/seq/bad%tag")->status == 400);

  const auto created = run_seq(a, {"create", "order", "--start", "1000", "--step", "20"});
  REQUIRE(created.status.code == 0);
  CHECK(created.out.find("order") != std::string::npos);
  const auto twice = run_seq(a, {"create", "order", "--start", "5"});
  CHECK(twice.status.code == 2);
  CHECK(twice.err.find("exists") != std::string::npos);
  CHECK(run_seq(a, {"create", "x", "--start", "0"}).status.code == 2);

  // Served at once by both, through the watch.
  REQUIRE(eventually([&] { return next_number(a, "order").has_value(); }, 10s));
  REQUIRE(eventually([&] { return next_number(b, "order").has_value(); }, 10s));
  const auto first = http_get(a.port(), "/seq/order?count=5&format=text");
  REQUIRE(first->status == 200);
  CHECK(first->headers.at("content-type").find("text/plain") != std::string::npos);

  std::vector<std::int64_t> from_a, from_b;
  for (int i = 0; i < 150; ++i) {
    for (auto* d : {&a, &b}) {
      const auto r = http_get(d->port(), "/seq/order?count=3");
      REQUIRE(r->status == 200);
      auto& into = d == &a ? from_a : from_b;
      const auto body = json::parse(r->body);
      for (const auto& n : body["ids"]) into.push_back(std::stoll(n.get<std::string>()));
    }
  }
  const auto leaf = http_get(b.port(), "/api/segment/get/order");
  REQUIRE(leaf->status == 200);
  from_b.push_back(std::stoll(leaf->body));
  CHECK(std::is_sorted(from_a.begin(), from_a.end()));
  CHECK(std::is_sorted(from_b.begin(), from_b.end()));
  std::set<std::int64_t> all(from_a.begin(), from_a.end());
  all.insert(from_b.begin(), from_b.end());
  CHECK(all.size() == from_a.size() + from_b.size());
  CHECK(*all.begin() >= 1000);

  // A tag created while the daemons run.
  REQUIRE(run_seq(b, {"create", "invoice", "--start", "7", "--step", "1"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(a, "invoice") == 7; }, 10s));

  const auto status = json::parse(http_get(a.port(), "/status")->body);
  CHECK(status["sequences"]["zookeeper"] == "connected");
  CHECK(status["sequences"]["tags"]["order"]["ready"] == true);
  CHECK(status["sequences"]["tags"]["order"]["handed_out"].get<std::int64_t>() >= 450);
  const auto ready_body = json::parse(http_get(a.port(), "/ready")->body);
  CHECK(ready_body["sequences"]["invoice"]["ready"] == true);
  const auto metrics = http_get(a.port(), "/metrics")->body;
  CHECK(metrics.find("snowflake_seq_numbers_total{tag=\"order\"}") != std::string::npos);
  CHECK(metrics.find("snowflake_seq_buffer_seconds{tag=\"order\"}") != std::string::npos);

  const auto listed = run_seq(a, {"list", "--json"});
  REQUIRE(listed.status.code == 0);
  const auto list = json::parse(listed.out);
  REQUIRE(list.size() == 2);
  CHECK(list[1]["tag"] == "order");
  CHECK(list[1]["next"].get<std::int64_t>() > *all.rbegin());
  CHECK(list[1]["step"] == 20);
  stop(a);
  stop(b);
}

TEST_CASE(
    "sequences: served from the buffer with ZooKeeper stopped, while IDs stop, and a clean "
    "stop gives the rest back",
    "[sequence]") {
  ZooKeeperServer zk;
  TempDir state;
  Daemon d(cluster_config(zk.hosts(), "recycle", state.path()).dump());
  wait_ready(d);
  REQUIRE(run_seq(d, {"create", "order", "--start", "1", "--step", "1000"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(d, "order") == 1; }, 10s));
  // The next range is fetched once a tenth of the first is used.
  for (int i = 0; i < 2; ++i) REQUIRE(http_get(d.port(), "/seq/order?count=100")->status == 200);
  REQUIRE(eventually([&] {
    const auto s = json::parse(http_get(d.port(), "/status")->body);
    return s["sequences"]["tags"]["order"]["left"].get<std::int64_t>() > 1000;
  }));

  zk.pause();  // ZooKeeper answers nothing: the lease runs out
  REQUIRE(eventually([&] { return error_of(http_get(d.port(), "/id/x")) == "lease_expired"; }));
  const auto during = http_get(d.port(), "/seq/order?count=500");
  REQUIRE(during->status == 200);
  const auto numbers = json::parse(during->body)["ids"];
  CHECK(std::stoll(numbers[0].get<std::string>()) == 202);
  zk.resume();
  REQUIRE(eventually([&] { return ready(d).has_value(); }));
  const auto last = next_number(d, "order");
  REQUIRE(last);
  stop(d);

  // The rest was given back: the next daemon starts right after.
  TempDir state2;
  Daemon again(cluster_config(zk.hosts(), "recycle", state2.path()).dump());
  wait_ready(again);
  std::optional<std::int64_t> first_again;
  REQUIRE(eventually(
      [&] {
        first_again = next_number(again, "order");
        return first_again.has_value();
      },
      10s));
  CHECK(*first_again == *last + 1);
  stop(again);
}

TEST_CASE(
    "sequences: a daemon that has not read the tags from ZooKeeper yet answers 503, not 404, "
    "for a tag that exists",
    "[sequence]") {
  ZooKeeperServer zk;
  TempDir first, second;
  Daemon d(cluster_config(zk.hosts(), "recycle", first.path()).dump());
  wait_ready(d);
  REQUIRE(run_seq(d, {"create", "order", "--start", "1"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(d, "order").has_value(); }, 10s));

  // Started while ZooKeeper answers nothing: it cannot know the tag yet.
  zk.pause();
  Daemon late(cluster_config(zk.hosts(), "recycle", second.path()).dump());
  const auto early = http_get(late.port(), "/seq/order");
  REQUIRE(early);
  CHECK(early->status == 503);
  CHECK(error_of(early) == "sequence_unavailable");
  CHECK(early->headers.count("retry-after") == 1);
  zk.resume();
  REQUIRE(eventually([&] { return next_number(late, "order").has_value(); }, 15s));
  // Once read, a tag that is not there is a 404.
  CHECK(http_get(late.port(), "/seq/nosuch")->status == 404);
  stop(d);
  stop(late);
}

namespace {

// What `seq list --json` says each run holds of `tag`.
json holders_of(const Daemon& any, const std::string& tag) {
  const auto listed = run_seq(any, {"list", "--json"});
  if (listed.status.code != 0) return json::array();
  for (const auto& row : json::parse(listed.out)) {
    if (row["tag"] == tag) return row["holders"];
  }
  return json::array();
}

}  // namespace

TEST_CASE(
    "sequences: seq raise exits 0 once every daemon dropped what is at or below, exits 1 "
    "naming one that cannot say so, and a killed run's holder node goes",
    "[sequence]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  auto a = std::make_unique<Daemon>(cluster_config(zk.hosts(), "recycle", sa.path()).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", sb.path()).dump());
  wait_ready(*a);
  wait_ready(b);
  REQUIRE(run_seq(b, {"create", "order", "--start", "1", "--step", "1000"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(*a, "order").has_value(); }, 10s));
  REQUIRE(eventually([&] { return next_number(b, "order").has_value(); }, 10s));
  auto held = holders_of(b, "order");
  REQUIRE(held.size() == 2);
  // Into the higher of the two ranges: one daemon holds numbers below it.
  std::int64_t top = 0;
  for (const auto& h : held) top = std::max(top, h["to"].get<std::int64_t>());
  const std::int64_t above = top - 10;
  const auto raised = run_seq(b, {"raise", "order", "--above", std::to_string(above)});
  INFO(raised.out << raised.err);
  REQUIRE(raised.status.code == 0);
  CHECK(raised.out.find("confirmed") != std::string::npos);
  CHECK(next_number(*a, "order") > above);
  CHECK(next_number(b, "order") > above);

  // b stopped: it cannot say it dropped what it holds.
  held = holders_of(b, "order");
  REQUIRE(held.size() == 2);
  std::string b_run;
  top = 0;
  for (const auto& h : held) {
    top = std::max(top, h["to"].get<std::int64_t>());
    if (h["owner"].get<std::string>().find(":" + std::to_string(b.port()) + " ") !=
        std::string::npos) {
      b_run = h["run"].get<std::string>();
    }
  }
  REQUIRE(!b_run.empty());
  b.process().send_signal(SIGSTOP);
  const std::int64_t higher = top - 1;
  const auto refused =
      run_seq(*a, {"raise", "order", "--above", std::to_string(higher), "--timeout", "1500"});
  b.process().send_signal(SIGCONT);
  CHECK(refused.status.code == 1);
  CHECK(refused.err.find(b_run) != std::string::npos);
  // Back: it drops them, and the same raise now exits 0.
  const auto again = run_seq(*a, {"raise", "order", "--above", std::to_string(higher)});
  CHECK(again.status.code == 0);
  CHECK(next_number(b, "order") > higher);

  // a killed: its holder node stays (it may be a cut-off daemon still
  // handing out); restarted from its state directory, the node goes.
  std::string a_run;
  for (const auto& h : holders_of(b, "order")) {
    if (h["run"] != b_run) a_run = h["run"].get<std::string>();
  }
  REQUIRE(!a_run.empty());
  a->process().send_signal(SIGKILL);
  a->process().wait_for_exit(10s);
  a.reset();
  const auto blocked = run_seq(
      b, {"raise", "order", "--above", std::to_string(higher + 1000000), "--timeout", "500"});
  CHECK(blocked.status.code == 1);
  CHECK(blocked.err.find(a_run) != std::string::npos);
  CHECK(blocked.err.find("seq forget") != std::string::npos);
  Daemon restarted(cluster_config(zk.hosts(), "recycle", sa.path()).dump());
  wait_ready(restarted);
  REQUIRE(eventually(
      [&] {
        const auto h = holders_of(b, "order");
        return std::none_of(h.begin(), h.end(), [&](const json& x) { return x["run"] == a_run; });
      },
      10s));

  // A run gone for good, and its state directory with it: seq forget.
  b.process().send_signal(SIGKILL);
  b.process().wait_for_exit(10s);
  CHECK(run_seq(restarted,
                {"raise", "order", "--above", std::to_string(higher + 2000000), "--timeout", "500"})
            .status.code == 1);
  CHECK(run_seq(restarted, {"forget", "nosuchrun"}).status.code == 2);
  // Written seconds ago: its daemon was alive then. Refused without --force.
  const auto young = run_seq(restarted, {"forget", b_run});
  CHECK(young.status.code == 3);
  CHECK_THAT(young.err, Catch::Contains("--force") && Catch::Contains("Nothing deleted"));
  CHECK_FALSE(holders_of(restarted, "order").empty());
  CHECK(run_seq(restarted, {"forget", b_run, "--force"}).status.code == 0);
  CHECK(run_seq(restarted, {"raise", "order", "--above", std::to_string(higher + 2000000)})
            .status.code == 0);
  stop(restarted);
}

TEST_CASE(
    "sequences at the top of int64: handed out to the last number, then 410: and a tag retired "
    "with seq raise --above 9223372036854775807 is confirmed and hands out nothing",
    "[sequence]") {
  ZooKeeperServer zk;
  TempDir state;
  Daemon d(cluster_config(zk.hosts(), "recycle", state.path()).dump());
  wait_ready(d);
  constexpr std::int64_t kTop = INT64_MAX;
  // Within the top 2^31: the buffer's pieces overflowed here (the daemon
  // grew past a gigabyte and stopped answering).
  REQUIRE(run_seq(d, {"create", "top", "--start", std::to_string(kTop - 40), "--step", "10"})
              .status.code == 0);
  REQUIRE(eventually([&] { return next_number(d, "top") == kTop - 40; }, 10s));
  std::vector<std::int64_t> got{kTop - 40};
  std::optional<HttpReply> last;
  for (int i = 0; i < 60; ++i) {
    last = http_get(d.port(), "/seq/top?count=3");
    REQUIRE(last);
    if (last->status != 200) break;
    const auto body = json::parse(last->body);
    for (const auto& n : body["ids"]) got.push_back(std::stoll(n.get<std::string>()));
  }
  CHECK(error_of(last) == "sequence_exhausted");
  CHECK(last->status == 410);
  // Every number to the last, once each: batches of 3 leave one (40 = 3 * 13 + 1),
  // which a batch of one still gets.
  const auto one = http_get(d.port(), "/seq/top");
  REQUIRE(one);
  if (one->status == 200)
    got.push_back(std::stoll(json::parse(one->body)["id"].get<std::string>()));
  CHECK(std::is_sorted(got.begin(), got.end()));
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
  CHECK(got.back() <= kTop - 1);
  CHECK(got.size() >= 39);
  CHECK(error_of(http_get(d.port(), "/seq/top")) == "sequence_exhausted");
  CHECK(json::parse(http_get(d.port(), "/status")->body)["sequences"]["tags"]["top"]["exhausted"] ==
        true);

  // Retiring a tag: confirmed, and nothing at all afterwards (floor + 1
  // overflowed: 9223372036854775808 and on were handed out).
  REQUIRE(run_seq(d, {"create", "ret", "--start", "1", "--step", "100"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(d, "ret") == 1; }, 10s));
  const auto retired =
      run_seq(d, {"raise", "ret", "--above", std::to_string(kTop), "--timeout", "10000"});
  INFO(retired.out << retired.err);
  CHECK(retired.status.code == 0);
  CHECK(retired.out.find("confirmed") != std::string::npos);
  for (int i = 0; i < 3; ++i) {
    const auto after = http_get(d.port(), "/seq/ret?count=2");
    REQUIRE(after);
    CHECK(after->status == 410);
    CHECK(error_of(after) == "sequence_exhausted");
  }
  CHECK(http_get(d.port(), "/health")->status == 200);
  stop(d);
}

TEST_CASE(
    "sequences: a daemon started from a copy of a running daemon's state directory keeps the "
    "original's holder node: with the original cut off, seq raise does not confirm",
    "[sequence]") {
  ZooKeeperServer zk;
  FaultProxy proxy(zk.port());
  TempDir sa, parent;
  Daemon a(cluster_config(proxy.hosts(), "recycle", sa.path()).dump());
  wait_ready(a);
  REQUIRE(run_seq(a, {"create", "cp", "--start", "1", "--step", "100"}).status.code == 0);
  REQUIRE(eventually([&] { return next_number(a, "cp") == 1; }, 10s));
  std::string a_run;
  REQUIRE(eventually([&] {
    const auto h = holders_of(a, "cp");
    if (h.size() == 1) a_run = h[0]["run"].get<std::string>();
    return !a_run.empty();
  }));

  // A cloned volume, `cp -a` of a running daemon's state.
  const auto copy = parent.path() / "copied-state";
  copy_directory(sa.path(), copy);
  Daemon b(cluster_config(zk.hosts(), "recycle", copy).dump());
  wait_ready(b);
  // Once it hands out a number, its supplier has dealt with the run it
  // found named in the directory (that comes first).
  REQUIRE(eventually([&] { return next_number(b, "cp").has_value(); }, 10s));
  CHECK_THAT(b.process().stderr_text(),
             Catch::Contains("this one is a copy") && Catch::Contains("seq forget " + a_run));
  const auto held = holders_of(b, "cp");
  CHECK(std::any_of(held.begin(), held.end(), [&](const json& h) { return h["run"] == a_run; }));

  // The original, cut off, goes on handing out its range: the raise must
  // not say that nobody does.
  proxy.stall();
  const auto raised = run_seq(b, {"raise", "cp", "--above", "20", "--timeout", "1500"});
  INFO(raised.out << raised.err);
  CHECK(raised.status.code == 1);
  CHECK(raised.err.find(a_run) != std::string::npos);
  const auto during = next_number(a, "cp");
  CHECK(during.has_value());
  CHECK(during <= 20);
  // Back: it drops them, and the raise is confirmed.
  proxy.heal();
  const auto again = run_seq(b, {"raise", "cp", "--above", "20", "--timeout", "20000"});
  INFO(again.out << again.err);
  CHECK(again.status.code == 0);
  CHECK(next_number(a, "cp") > 20);
  stop(a);
  stop(b);
}

TEST_CASE(
    "sequences: requests waiting for a dry tag's range do not hold up the event loop: /id is "
    "answered meanwhile on the one I/O thread, and the range, once it comes, answers each",
    "[sequence]") {
  ZooKeeperServer zk;
  TempDir state;
  // One event loop, a long wait, and a session that outlives the pause below
  // (so the daemon counts ZooKeeper connected, and each request waits).
  const json patch = {{"coordinator", {{"static_worker_id", 3}}},
                      {"sequences", {{"enabled", true}, {"max_wait_ms", 8000}}},
                      {"zookeeper", {{"session_timeout_ms", 30000}}}};
  Daemon d(cluster_config(zk.hosts(), "static", state.path(), patch).dump());
  REQUIRE(run_seq(d, {"create", "dry", "--start", "1", "--step", "10"}).status.code == 0);
  REQUIRE(eventually([&] {
    const auto r = http_get(d.port(), "/status");
    if (!r || r->status != 200) return false;
    const auto s = json::parse(r->body)["sequences"];
    return s["zookeeper"] == "connected" && s["tags"].contains("dry");
  }));

  zk.pause();  // no range comes while it is stopped
  std::vector<std::unique_ptr<HttpConnection>> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::make_unique<HttpConnection>(d.port(), "127.0.0.1", 20s));
    waiting.back()->send("GET /seq/dry HTTP/1.1\r\nHost: t\r\n\r\n");
  }
  // A blocked loop answered this only once the waits ended (8 s each).
  HttpConnection ids(d.port(), "127.0.0.1", 3s);
  const auto id = ids.request("/id/x");
  REQUIRE(id);
  CHECK(id->status == 200);
  const auto health = ids.request("/health");
  REQUIRE(health);
  CHECK(health->status == 200);

  zk.resume();  // the range comes: each waiting request is answered from it
  std::set<std::string> numbers;
  for (auto& c : waiting) {
    const auto r = c->read_reply();
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 200);
    if (r->status == 200) numbers.insert(json::parse(r->body)["id"].get<std::string>());
  }
  CHECK(numbers.size() == 4);
  stop(d);
}
