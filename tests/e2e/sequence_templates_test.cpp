// Sequences printed with a template (`seq create --template 'ORD-{n:04}'
// --max N`) through the real snowflaked: bad templates and bounds refused
// with exit 2 naming them and nothing made; the printed form and the number
// in every shape, alike on two daemons; the bound never passed (410, never
// a number wider than the template); a plain sequence's answer unchanged.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

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

TEST_CASE("a sequence with a template prints its numbers and never passes its --max",
          "[sequence][template]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  const json patch = {{"http", {{"leaf_compat", true}}}};
  Daemon a(cluster_config(zk.hosts(), "recycle", sa.path(), patch).dump());
  Daemon b(cluster_config(zk.hosts(), "recycle", sb.path(), patch).dump());
  wait_ready(a);
  wait_ready(b);

  // Refused, each naming what is wrong, and nothing is made.
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"--template", "ORD-{q}-{n}"}, "--template: template 'ORD-{q}-{n}': unknown token {q}"},
      {{"--template", "{yyyy}-{n}"}, "never restarts"},
      {{"--template", "ORD {n}"}, "character 3"},
      {{"--template", "ORD"}, "no {n}"},
      {{"--template", "ORD-{n:04}", "--max", "10000"}, "--max: 10000 is wider than the template"},
      {{"--max", "0"}, "--max: must be a whole number"},
      {{"--start", "1000", "--template", "X{n:02}"},
       "--start: 1000 is wider than the template prints (at most 99)"},
      {{"--start", "20", "--max", "10"}, "--max: 10 is below the first number (20)"}};
  for (const auto& [flags, message] : refused) {
    std::vector<std::string> args{"create", "order"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = run_seq(a, args);
    INFO(r.err);
    CHECK(r.status.code == 2);
    CHECK(r.err.find(message) != std::string::npos);
  }
  const auto none = run_seq(a, {"list", "--json"});
  REQUIRE(none.status.code == 0);
  CHECK(json::parse(none.out).empty());

  const auto created =
      run_seq(a, {"create", "order", "--template", "ORD-{n:04}", "--max", "12", "--step", "4"});
  REQUIRE(created.status.code == 0);
  CHECK(created.out.find("numbers from 1 to 12") != std::string::npos);
  CHECK(created.out.find("printed as 'ORD-{n:04}'") != std::string::npos);
  REQUIRE(run_seq(a, {"create", "plain", "--start", "5"}).status.code == 0);

  // One number: its printed form, and the number. Every answer below is
  // checked alike: "ORD-" and the number in four digits, never one twice.
  std::set<std::int64_t> seen;
  const auto printed_as = [&seen](const std::string& id, std::int64_t n) {
    CHECK(id == fmt::format("ORD-{:04}", n));
    CHECK(n >= 1);
    CHECK(n <= 12);
    CHECK(seen.insert(n).second);
  };
  std::optional<HttpReply> one;
  REQUIRE(eventually(
      [&] {
        one = http_get(a.port(), "/seq/order");
        return one && one->status == 200;
      },
      20s));
  CHECK(json::parse(one->body) == json{{"id", "ORD-0001"}, {"number", "1"}, {"tag", "order"}});
  seen.insert(1);
  // What an alert needs to warn before the numbers run out: the last one,
  // and how many ZooKeeper held below it after this daemon's take.
  CHECK(metric(a, "snowflake_seq_max{tag=\"order\"}") == 12);
  const auto left = metric(a, "snowflake_seq_left_to_take{tag=\"order\"}");
  CHECK(left >= 0);
  CHECK(left < 12);
  // Without a --max: -1, which the alert leaves out.
  REQUIRE(eventually([&] { return http_get(a.port(), "/seq/plain")->status == 200; }, 20s));
  CHECK(metric(a, "snowflake_seq_max{tag=\"plain\"}") == -1);
  CHECK(metric(a, "snowflake_seq_left_to_take{tag=\"plain\"}") == -1);
  std::optional<HttpReply> batch;
  REQUIRE(eventually(
      [&] {
        batch = http_get(b.port(), "/seq/order?count=3");
        return batch && batch->status == 200;
      },
      20s));
  const auto many = json::parse(batch->body);
  CHECK(many["tag"] == "order");
  REQUIRE(many["ids"].size() == 3);
  REQUIRE(many["numbers"].size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    printed_as(many["ids"][i].get<std::string>(),
               std::stoll(many["numbers"][i].get<std::string>()));
  }
  const auto text = http_get(a.port(), "/seq/order?count=2&format=text");
  REQUIRE(text->status == 200);
  REQUIRE(text->body.size() == 18);  // two lines of "ORD-dddd"
  printed_as(text->body.substr(0, 8), std::stoll(text->body.substr(4, 4)));
  printed_as(text->body.substr(9, 8), std::stoll(text->body.substr(13, 4)));
  // Leaf's route: the bare number, as Leaf's clients read it.
  const auto leaf = http_get(a.port(), "/api/segment/get/order");
  REQUIRE(leaf->status == 200);
  const auto leaf_number = std::stoll(leaf->body);
  printed_as(fmt::format("ORD-{:04}", leaf_number), leaf_number);

  // Up to --max, and not one past it, from either daemon: each answers 410
  // once its ranges are used up and ZooKeeper has none left.
  REQUIRE(eventually(
      [&] {
        int gone = 0;
        for (auto* d : {&a, &b}) {
          const auto r = http_get(d->port(), "/seq/order");
          REQUIRE(r);
          if (r->status == 200) {
            const auto body = json::parse(r->body);
            printed_as(body["id"].get<std::string>(),
                       std::stoll(body["number"].get<std::string>()));
          } else if (r->status == 410) {
            CHECK(error_of(r) == "sequence_exhausted");
            ++gone;
          } else {
            // Before its supplier has found ZooKeeper's numbers used up.
            CHECK(error_of(r) == "sequence_unavailable");
          }
        }
        return gone == 2;
      },
      30s));
  // A range a daemon took at its end but did not hand out is a gap at most.
  CHECK(seen.size() <= 12);
  CHECK(seen.size() >= 8);

  // A sequence without a template answers as before.
  REQUIRE(eventually([&] { return http_get(b.port(), "/seq/plain")->status == 200; }, 20s));
  CHECK(json::parse(http_get(b.port(), "/seq/plain")->body).size() == 2);

  const auto listed = run_seq(a, {"list", "--json"});
  REQUIRE(listed.status.code == 0);
  const auto list = json::parse(listed.out);
  REQUIRE(list.size() == 2);
  CHECK(list[0]["tag"] == "order");
  CHECK(list[0]["template"] == "ORD-{n:04}");
  CHECK(list[0]["max"] == 12);
  CHECK(list[1]["template"].is_null());
  CHECK(list[1]["max"] == INT64_MAX - 1);
  const auto table = run_seq(a, {"list"});
  CHECK(table.out.find("printed as 'ORD-{n:04}', numbers up to 12") != std::string::npos);
  stop(a);
  stop(b);
}
