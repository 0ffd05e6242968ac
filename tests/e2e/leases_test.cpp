// Worker-ID leases for generators in other processes, over the real
// snowflaked and a real ZooKeeper: taken from one daemon, renewed through
// another (and through a killed one's neighbour), given back, lost when
// late, reclaimed past the holder's fence when it goes silent, and a full
// pool refused. The holder here is the test itself, speaking HTTP.

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <regex>
#include <set>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "lease_holder.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string& kRoot = kE2eRoot;
const std::int64_t kEpochMs = LayoutSettings{}.epoch_ms;

// 8 worker IDs (3 bits), leases of up to 1.5 s (the daemons' own lease),
// reclaimed 2.5 s after their last write.
json lease_config(const ZooKeeperServer& zk, const TempDir& state,
                  const json& leases = {{"enabled", true}, {"reserved_worker_ids", 0}}) {
  return cluster_config(zk.hosts(), "recycle", state.path(),
                        {{"layout", {{"worker_bits", 3}, {"sequence_bits", 19}}},
                         {"coordinator", {{"max_skew_ms", 200}}},
                         {"leases", leases}});
}

std::optional<HttpReply> ask(const Daemon& d, const std::string& method,
                             const std::string& target) {
  return ask_lease(d, method, target);
}

json take(const Daemon& d, const std::string& query = "holder=e2e&duration_ms=1500") {
  return take_lease(d, query);
}

std::string lease_path(const json& lease) {
  return fmt::format("/v1/leases/{}", lease["worker_id"].get<std::uint32_t>());
}

std::optional<HttpReply> renew(const Daemon& d, const json& lease, const std::string& extra = "") {
  return ask(
      d, "PUT",
      fmt::format("{}?token={}{}", lease_path(lease), lease["token"].get<std::string>(), extra));
}

std::int64_t free_floor(ZooKeeperServer& zk, std::uint32_t id) {
  auto s = connect(zk);
  const auto node = s->try_get(fmt::format("{}/pool/notuse/{}", kRoot, id)).value();
  if (!node) return -1;
  return coord::decode_notuse(node->data)->floor;
}

std::string code_of(const std::optional<HttpReply>& r) {
  if (!r) return "no reply";
  return json::parse(r->body).value("error", "");
}

}  // namespace

TEST_CASE(
    "leases: taken from one daemon, renewed through another, given back: the next holder "
    "starts past the last stamp",
    "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  Daemon a(lease_config(zk, sa).dump());
  Daemon b(lease_config(zk, sb).dump());
  const std::set<std::uint32_t> daemons{wait_ready(a), wait_ready(b)};

  const auto before = wall_ms_now();
  const json lease = take(a);
  const auto id = lease["worker_id"].get<std::uint32_t>();
  CHECK_FALSE(daemons.contains(id));  // one ID space: never a daemon's own
  CHECK(std::regex_match(lease["token"].get<std::string>(), std::regex("[0-9a-f]{32}")));
  CHECK(lease["lease_ms"] == 1500);
  CHECK(lease["renew_after_ms"] == 500);
  CHECK(lease["datacenter_id"] == 0);
  CHECK(lease["first_timestamp_ms"] == kEpochMs);  // a worker ID never used
  CHECK(lease["max_timestamp_ms"].get<std::int64_t>() >= before + 1500);
  CHECK(lease["layout"]["worker_bits"] == 3);
  CHECK(lease["layout"]["sequence_bits"] == 19);
  CHECK(lease["layout"]["epoch_ms"] == kEpochMs);
  CHECK(lease["layout"]["order"] == "time,datacenter,worker,sequence");
  CHECK(lease["layout"]["datacenter_bits"] == 0);
  {
    auto s = connect(zk);
    const auto node =
        coord::decode_inuse(s->get(fmt::format("{}/pool/inuse/{}", kRoot, id)).value().data);
    REQUIRE(node);
    CHECK(node->owner.host == "e2e");
    CHECK(node->lease_ms == 1500);
  }

  // Renewed through the other daemon, with the last stamp used.
  const auto stamp = wall_ms_now();
  const auto renewed = renew(b, lease, fmt::format("&last_timestamp_ms={}", stamp));
  REQUIRE(renewed);
  INFO(renewed->body);
  REQUIRE(renewed->status == 200);
  const json terms = json::parse(renewed->body);
  CHECK(terms["worker_id"] == id);
  CHECK_FALSE(terms.contains("token"));
  CHECK(terms["first_timestamp_ms"] == kEpochMs);
  CHECK(terms["max_timestamp_ms"].get<std::int64_t>() >= stamp + 1500);

  // A wrong token renews nothing and gives nothing back.
  json stranger = lease;
  stranger["token"] = "0123456789abcdef0123456789abcdef";
  const auto refused = renew(b, stranger);
  REQUIRE(refused);
  CHECK(refused->status == 410);
  CHECK(code_of(refused) == "lease_lost");

  // Given back through A with its last stamp: the floor the next holder
  // starts above.
  const auto given = ask(a, "DELETE",
                         fmt::format("{}?token={}&last_timestamp_ms={}", lease_path(lease),
                                     lease["token"].get<std::string>(), stamp + 7));
  REQUIRE(given);
  CHECK(given->status == 200);
  CHECK(json::parse(given->body) ==
        json{{"worker_id", id}, {"pool", "cluster"}, {"given_back", true}});
  CHECK(free_floor(zk, id) == stamp + 7);
  const auto after = renew(a, lease);
  REQUIRE(after);
  CHECK(after->status == 410);
  CHECK(code_of(after) == "lease_lost");

  // The pool has 6 free worker IDs; take until this one comes back.
  std::vector<json> taken;
  for (int i = 0; i < 6; ++i) {
    taken.push_back(take(b));
    if (taken.back()["worker_id"] == id) break;
  }
  REQUIRE(taken.back()["worker_id"] == id);
  CHECK(taken.back()["first_timestamp_ms"] == stamp + 8);

  // Counted where each was answered.
  const auto metrics = http_get(a.port(), "/metrics")->body;
  CHECK_THAT(metrics,
             Catch::Contains("snowflake_worker_leases_total{pool=\"cluster\",event=\"taken\"} 1"));
  CHECK_THAT(
      metrics,
      Catch::Contains("snowflake_worker_leases_total{pool=\"cluster\",event=\"given_back\"} 1"));
  CHECK_THAT(metrics,
             Catch::Contains("snowflake_worker_leases_total{pool=\"cluster\",event=\"lost\"} 1"));
}

TEST_CASE(
    "leases: a holder gone silent: its worker ID comes back past its fence, its renewal is lost, "
    "the next holder starts past it",
    "[coord][leases][safety]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(lease_config(zk, sa).dump());
  wait_ready(a);
  const json silent = take(a);
  const auto id = silent["worker_id"].get<std::uint32_t>();
  const auto fence = silent["max_timestamp_ms"].get<std::int64_t>();
  // Reclaimed by the daemon's reaper once 2.5 s old by ZooKeeper's clock.
  REQUIRE(eventually([&] { return free_floor(zk, id) >= 0; }, 20s));
  CHECK(free_floor(zk, id) == fence);  // the last stamp its lease allowed
  const auto late = renew(a, silent);
  REQUIRE(late);
  CHECK(late->status == 410);
  CHECK(code_of(late) == "lease_lost");
  // Taken again (the others first), it starts past the silent one's fence.
  std::vector<json> taken;
  for (int i = 0; i < 7; ++i) {
    taken.push_back(take(a));
    if (taken.back()["worker_id"] == id) break;
  }
  REQUIRE(taken.back()["worker_id"] == id);
  CHECK(taken.back()["first_timestamp_ms"] == fence + 1);
}

TEST_CASE("leases: the daemon that granted it killed, another renews it", "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  auto a = std::make_unique<Daemon>(lease_config(zk, sa).dump());
  Daemon b(lease_config(zk, sb).dump());
  wait_ready(*a);
  wait_ready(b);
  const json lease = take(*a);
  a->process().send_signal(SIGKILL);
  a.reset();
  for (int i = 0; i < 3; ++i) {  // renewed as its holder would, at a third of the lease
    const auto r = renew(b, lease);
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 200);
    std::this_thread::sleep_for(500ms);
  }
  auto s = connect(zk);
  CHECK(s->exists(fmt::format("{}/pool/inuse/{}", kRoot, lease["worker_id"].get<int>())).value());
}

TEST_CASE("leases: a full pool is refused clearly, nothing handed out twice", "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa;
  Daemon a(lease_config(zk, sa).dump());
  std::set<std::uint32_t> held{wait_ready(a)};
  for (int i = 0; i < 7; ++i) {
    CHECK(held.insert(take(a, "holder=fill").at("worker_id").get<std::uint32_t>()).second);
  }
  CHECK(held.size() == 8);
  const auto full = ask(a, "POST", "/v1/leases?holder=fill");
  REQUIRE(full);
  CHECK(full->status == 503);
  CHECK(code_of(full) == "pool_exhausted");
  CHECK(full->headers.contains("retry-after"));
}

TEST_CASE("leases: bad requests get a clear 4xx and change nothing, off: 503 leases_disabled",
          "[coord][leases]") {
  ZooKeeperServer zk;
  TempDir sa, sb;
  Daemon a(lease_config(zk, sa).dump());
  wait_ready(a);
  const json lease = take(a);
  const auto token = lease["token"].get<std::string>();
  const auto id = lease["worker_id"].get<std::uint32_t>();
  const std::vector<std::tuple<std::string, std::string, unsigned, std::string>> cases = {
      {"POST", "/v1/leases", 400, "bad_holder"},
      {"POST", "/v1/leases?holder=a/b", 400, "bad_holder"},
      {"POST", "/v1/leases?holder=x&duration_ms=99", 400, "bad_duration"},
      {"POST", "/v1/leases?holder=x&duration_ms=-5", 400, "bad_duration"},
      {"POST", "/v1/leases?holder=x&colour=red", 400, "unknown_parameter"},
      {"GET", "/v1/leases", 405, "method_not_allowed"},
      {"POST", fmt::format("/v1/leases/{}", id), 405, "method_not_allowed"},
      {"PUT", fmt::format("/v1/leases/{}", id), 400, "bad_token"},
      {"PUT", fmt::format("/v1/leases/{}?token=XYZ", id), 400, "bad_token"},
      {"PUT", fmt::format("/v1/leases/{}?token={}&last_timestamp_ms=soon", id, token), 400,
       "bad_timestamp"},
      {"PUT", fmt::format("/v1/leases/8?token={}", token), 404, "not_found"},
      {"DELETE", fmt::format("/v1/leases/x?token={}", token), 404, "not_found"},
  };
  for (const auto& [method, target, status, code] : cases) {
    const auto r = ask(a, method, target);
    REQUIRE(r);
    INFO(method << " " << target << ": " << r->body);
    CHECK(r->status == status);
    CHECK(code_of(r) == code);
  }
  // The lease is as it was: renewable, its duration capped at the longest.
  const auto r = renew(a, lease, "&duration_ms=99999999");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["lease_ms"] == 1500);

  Daemon off(lease_config(zk, sb, {{"enabled", false}}).dump());
  wait_ready(off);
  const auto disabled = ask(off, "POST", "/v1/leases?holder=x");
  REQUIRE(disabled);
  CHECK(disabled->status == 503);
  CHECK(code_of(disabled) == "leases_disabled");
}
