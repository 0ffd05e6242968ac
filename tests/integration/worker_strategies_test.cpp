// The worker-ID strategies and the cluster root check against a real
// ZooKeeper server: concurrency by real threads with their own sessions.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/report/pool_status.hpp"
#include "snowflake/workers/recycle_pool.hpp"
#include "snowflake/workers/sequential_worker.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::report;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;
constexpr std::int64_t kLeaseMs = 3000;
constexpr std::int64_t kAnyFloor = INT64_MAX;  // no floor is too far ahead
const std::string kRoot = "/snowflake/test";

InuseData owner_data(const std::string& name, std::int64_t ts = kNow) {
  return {OwnerToken::fresh(name, 8080), 0, ts, 0, kLeaseMs};
}

Result<PoolClaim, CoordError> claim(RecyclePool& pool, ZkSession& s, const InuseData& data) {
  return pool.claim(s, data, kAnyFloor);
}

// A sequential daemon's acquisition as a new run (its own token), no proof
// about any predecessor.
Result<SequentialClaim, CoordError> acquire(SequentialWorker& w, ZkSession& s, std::int64_t now,
                                            const OwnerToken& token = OwnerToken::fresh("h", 1)) {
  return w.acquire(s, token, now, kLeaseMs, kAnyFloor, std::nullopt);
}

std::set<std::string> children(ZkSession& s, const std::string& path) {
  const auto names = s.children(path).value();
  return {names.begin(), names.end()};
}

// A pool of `size` worker IDs (size = 2^k) at kRoot, filled.
RecyclePool make_pool(ZkSession& s, std::uint32_t size) {
  RecyclePool pool(kRoot, size - 1);
  REQUIRE(pool.ensure(s, 5s));
  return pool;
}

bool alive_held(ZkSession& s, std::uint32_t id) {
  return s.exists(kRoot + "/alive/" + std::to_string(id)).value().has_value();
}

}  // namespace

TEST_CASE(
    "cluster root: layout and strategy stored by the first daemon, others refused naming both",
    "[zk][layout]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const LayoutSettings ours{};
  REQUIRE(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle));
  CHECK(decode_layout(s->get(kRoot).value().data) == ours);
  CHECK_THAT(s->get(kRoot).value().data, Catch::Contains("\"strategy\":\"recycle\""));
  CHECK(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle));  // the same again: fine

  LayoutSettings other = ours;
  other.worker_bits = 8;
  other.sequence_bits = 14;
  const auto refused = check_cluster_root(*s, kRoot, other, CoordinatorType::recycle);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::layout_mismatch);
  CHECK(refused.error().fatal());
  CHECK_THAT(refused.error().message, Catch::Contains("worker_bits 10, sequence_bits 12") &&
                                          Catch::Contains("worker_bits 8, sequence_bits 14"));

  const auto mixed = check_cluster_root(*s, kRoot, ours, CoordinatorType::sequential);
  REQUIRE(mixed.has_error());
  CHECK(mixed.error().code == CoordErrc::strategy_mismatch);
  CHECK(mixed.error().fatal());
  CHECK_THAT(mixed.error().message, Catch::Contains("\"recycle\"") &&
                                        Catch::Contains("\"sequential\"") &&
                                        Catch::Contains("another zookeeper.root"));

  SECTION("an empty root made by an operator is claimed") {
    REQUIRE(s->create("/empty", ""));
    REQUIRE(check_cluster_root(*s, "/empty", other, CoordinatorType::sequential));
    CHECK(decode_layout(s->get("/empty").value().data) == other);
    CHECK(check_cluster_root(*s, "/empty", other, CoordinatorType::recycle).error().code ==
          CoordErrc::strategy_mismatch);
  }
  SECTION("a root written before strategies were recorded gets the first one to come") {
    REQUIRE(s->create("/old", encode_layout(ours)));
    REQUIRE(check_cluster_root(*s, "/old", ours, CoordinatorType::sequential));
    CHECK(check_cluster_root(*s, "/old", ours, CoordinatorType::recycle).error().code ==
          CoordErrc::strategy_mismatch);
  }
}

TEST_CASE(
    "cluster root: the opaque key's fingerprint is recorded by the first daemon with one, "
    "another key refused naming both, and daemons without one pass and keep it",
    "[zk][layout][forms]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const LayoutSettings ours{};
  // A daemon without a key first: nothing recorded.
  REQUIRE(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle));
  CHECK_FALSE(nlohmann::json::parse(s->get(kRoot).value().data).contains("opaque_key"));
  // The first with a key records its fingerprint beside what is there.
  REQUIRE(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle, 0, "aaaa1111"));
  CHECK(nlohmann::json::parse(s->get(kRoot).value().data).at("opaque_key") == "aaaa1111");
  CHECK(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle, 0, "aaaa1111"));
  // Another key is refused for good (exit 3), naming both fingerprints.
  const auto other = check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle, 0, "bbbb2222");
  REQUIRE(other.has_error());
  CHECK(other.error().code == CoordErrc::opaque_key_mismatch);
  CHECK(other.error().permanent());
  CHECK_THAT(other.error().message, Catch::Contains("aaaa1111") && Catch::Contains("bbbb2222") &&
                                        Catch::Contains("forms.opaque_key_file"));
  // A daemon without a key still joins, and the fingerprint stays; so does
  // it when such a daemon records a strategy an older root lacked.
  CHECK(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle));
  REQUIRE(s->set(
      kRoot,
      R"({"time_bits":41,"worker_bits":10,"sequence_bits":12,"time_unit_ms":1,"epoch_ms":1735689600000,"opaque_key":"aaaa1111"})",
      -1));
  REQUIRE(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle));
  const auto kept = nlohmann::json::parse(s->get(kRoot).value().data);
  CHECK(kept.at("strategy") == "recycle");
  CHECK(kept.at("opaque_key") == "aaaa1111");
  CHECK(check_cluster_root(*s, kRoot, ours, CoordinatorType::recycle, 0, "bbbb2222").error().code ==
        CoordErrc::opaque_key_mismatch);
}

TEST_CASE(
    "cluster root: a new cluster records the form policy of the config that makes it, and a "
    "daemon's first check with other forms (its forms section left out) is refused naming both",
    "[zk][layout][forms]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const LayoutSettings ours{};
  const FormPolicy opaque_orders{IdForm::plain, {{"order", IdForm::opaque}}};
  const auto check = [&](const std::string& root, const FormPolicy& forms, bool compare = true) {
    return check_cluster_root(*s, root, ours, CoordinatorType::recycle, 0, "aaaa1111", {},
                              RootForms{forms, compare});
  };
  // Made now: recorded beside the rest.
  REQUIRE(check(kRoot, opaque_orders));
  const auto recorded = nlohmann::json::parse(s->get(kRoot).value().data);
  CHECK(recorded.at("forms").at("tags").at("order") == "opaque");
  CHECK(recorded.at("opaque_key") == "aaaa1111");
  CHECK(check(kRoot, opaque_orders));
  // Without the forms section: refused for good (exit 3), naming both.
  const auto bare = check(kRoot, FormPolicy{});
  REQUIRE(bare.has_error());
  CHECK(bare.error().code == CoordErrc::form_policy_mismatch);
  CHECK(bare.error().permanent());
  CHECK_THAT(bare.error().message, Catch::Contains("order opaque") &&
                                       Catch::Contains("no tag pinned") &&
                                       Catch::Contains("cluster forms --set"));
  // Everything opaque by default is another policy too, though order goes out opaque.
  CHECK(check(kRoot, FormPolicy{IdForm::opaque, {}}).error().code ==
        CoordErrc::form_policy_mismatch);
  // A later check (a new session) compares nothing and changes nothing.
  CHECK(check(kRoot, FormPolicy{}, /*compare=*/false));
  CHECK(nlohmann::json::parse(s->get(kRoot).value().data).at("forms") == recorded.at("forms"));
  // A record that is not a policy is refused, never read as none.
  auto data = recorded;
  data["forms"] = "plain";
  REQUIRE(s->set(kRoot, data.dump(), -1));
  CHECK(check(kRoot, opaque_orders).error().code == CoordErrc::form_policy_mismatch);

  // A cluster that ran before policies were recorded gets none added: which
  // replica's config would it be? Any forms join it.
  REQUIRE(check_cluster_root(*s, "/older", ours, CoordinatorType::recycle));
  CHECK(check("/older", opaque_orders));
  CHECK(check("/older", FormPolicy{}));
  CHECK_FALSE(nlohmann::json::parse(s->get("/older").value().data).contains("forms"));
  // A root made empty (by a path, not a daemon) is a new cluster: recorded.
  REQUIRE(s->create("/empty", ""));
  REQUIRE(check("/empty", opaque_orders));
  CHECK(nlohmann::json::parse(s->get("/empty").value().data).contains("forms"));
}

TEST_CASE(
    "cluster root: a datacenter layout records its datacenter, another datacenter is refused "
    "naming both, and a sonyflake order is a layout of its own",
    "[zk][layout]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const LayoutSettings twitter = find_layout_preset("twitter").value();
  REQUIRE(check_cluster_root(*s, kRoot, twitter, CoordinatorType::recycle, 3));
  CHECK(decode_layout(s->get(kRoot).value().data) == twitter);
  CHECK_THAT(s->get(kRoot).value().data, Catch::Contains("\"datacenter_id\":3"));
  CHECK(check_cluster_root(*s, kRoot, twitter, CoordinatorType::recycle, 3));

  const auto other = check_cluster_root(*s, kRoot, twitter, CoordinatorType::recycle, 4);
  REQUIRE(other.has_error());
  CHECK(other.error().code == CoordErrc::datacenter_mismatch);
  CHECK(other.error().fatal());
  CHECK_THAT(other.error().message,
             Catch::Contains("datacenter 3") && Catch::Contains("coordinator.datacenter_id is 4"));

  // The same widths in sonyflake's order are another layout; a daemon from
  // before orders existed (which reads only integer widths) cannot read it.
  LayoutSettings sony{
      .time_bits = 41, .worker_bits = 10, .sequence_bits = 12, .order = FieldOrder::sequence_high};
  REQUIRE(check_cluster_root(*s, "/sony", sony, CoordinatorType::recycle));
  CHECK(decode_layout(s->get("/sony").value().data) == sony);
  CHECK(check_cluster_root(*s, "/sony", LayoutSettings{}, CoordinatorType::recycle).error().code ==
        CoordErrc::layout_mismatch);
  const auto stored = nlohmann::json::parse(s->get("/sony").value().data);
  CHECK_FALSE(stored.at("sequence_bits").is_number_integer());
  // A root without a datacenter field records no datacenter ID.
  REQUIRE(check_cluster_root(*s, "/plain", LayoutSettings{}, CoordinatorType::recycle));
  CHECK_FALSE(nlohmann::json::parse(s->get("/plain").value().data).contains("datacenter_id"));
}

TEST_CASE("sequential: a fresh node, reused after a restart, its data written",
          "[zk][sequential]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  SequentialWorker a(kRoot, "hostA:8080", 1023);
  auto first = acquire(a, *s, kNow).value();
  CHECK(first.worker_id == 0);
  CHECK(first.path == kRoot + "/forever/hostA:8080-0000000000");
  CHECK(first.data.floor == 0);  // a new identity: nobody used it before
  const auto data = decode_sequential(s->get(first.path).value().data).value();
  CHECK(data.host == "hostA");
  CHECK(data.port == 8080);
  CHECK(data.ts == kNow);
  CHECK(data.lease_ms == kLeaseMs);
  CHECK(alive_held(*s, 0));

  REQUIRE(a.heartbeat(*s, first, kNow + 10, kNow + 7));
  SequentialWorker b(kRoot, "hostB:8080", 1023);
  CHECK(acquire(b, *s, kNow).value().worker_id == 1);

  // A restart: a new session, the same name; nothing proves the old run
  // dead, so the floor covers its whole lease after its last heartbeat.
  s = connect(zk);
  SequentialWorker again_worker(kRoot, "hostA:8080", 1023);
  const auto again = acquire(again_worker, *s, kNow + 20).value();
  CHECK(again.worker_id == 0);
  CHECK(again.path == first.path);
  CHECK(again.data.floor == kNow + 10 + kLeaseMs);
  CHECK(children(*s, kRoot + "/forever").size() == 2);
}

TEST_CASE("sequential: one identity, one live holder, the next one starts above the last's lease",
          "[zk][sequential][safety]") {
  ZooKeeperServer zk;
  auto s1 = connect(zk);
  auto s2 = connect(zk);
  const auto token_a = OwnerToken::fresh("clone", 7001);
  SequentialWorker a(kRoot, "clone:9000", 1023);
  auto held = acquire(a, *s1, kNow, token_a).value();
  REQUIRE(a.heartbeat(*s1, held, kNow + 100, kNow + 90));

  SequentialWorker b(kRoot, "clone:9000", 1023);
  const auto refused = acquire(b, *s2, kNow + 200);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::held);
  CHECK_THAT(refused.error().message,
             Catch::Contains("clone:7001 pid") && Catch::Contains("clone:9000"));

  SECTION("the first ends its session: the second takes over above its time fence") {
    s1.reset();
    const auto taken = acquire(b, *s2, kNow + 300).value();
    CHECK(taken.worker_id == held.worker_id);
    CHECK(taken.data.floor == kNow + 100 + kLeaseMs);
    // The first, back with a new session, finds the identity held.
    auto s3 = connect(zk);
    CHECK(a.heartbeat(*s3, held, kNow + 400, kNow + 400).error().code == CoordErrc::lost);
  }
  SECTION("a clean release hands on exactly its last instant") {
    REQUIRE(a.release(*s1, held, kNow + 150));
    CHECK_FALSE(alive_held(*s2, held.worker_id));
    CHECK(acquire(b, *s2, kNow + 300).value().data.floor == kNow + 150);
  }
  SECTION("our own dead predecessor, proved by the state dir: its reservation is the floor") {
    s1.reset();
    const Predecessor p{token_a, held.path, kNow + 120};
    const auto taken =
        b.acquire(*s2, OwnerToken::fresh("clone", 9000), kNow + 300, kLeaseMs, kAnyFloor, p)
            .value();
    CHECK(taken.data.floor == kNow + 120);
  }
  SECTION("a floor out of reach: the identity is let go, to try again later") {
    s1.reset();
    const auto far = b.acquire(*s2, OwnerToken::fresh("clone", 9000), kNow + 300, kLeaseMs,
                               kNow + 1000, std::nullopt);
    REQUIRE(far.has_error());
    CHECK(far.error().code == CoordErrc::floors_ahead);
    CHECK_FALSE(alive_held(*s2, held.worker_id));
  }
}

TEST_CASE("sequential: a session lost and a new one: the heartbeat makes the alive node again",
          "[zk][sequential]") {
  ZooKeeperServer zk;
  auto s1 = connect(zk);
  SequentialWorker a(kRoot, "h:1", 1023);
  auto held = acquire(a, *s1, kNow).value();
  s1.reset();  // as if expired: the alive node is gone
  auto s2 = connect(zk);
  CHECK_FALSE(alive_held(*s2, held.worker_id));
  REQUIRE(a.heartbeat(*s2, held, kNow + 5, kNow + 5));
  CHECK(alive_held(*s2, held.worker_id));
  CHECK(held.alive_session == s2->session_id());
}

TEST_CASE("sequential: concurrent first boots get distinct worker IDs", "[zk][sequential]") {
  ZooKeeperServer zk;
  constexpr int kDaemons = 12;
  std::vector<std::uint32_t> ids(kDaemons, 9999);
  std::vector<std::thread> threads;
  for (int i = 0; i < kDaemons; ++i) {
    threads.emplace_back([&, i] {
      auto s = connect(zk);
      SequentialWorker w(kRoot, "host" + std::to_string(i) + ":1", 1023);
      auto c = acquire(w, *s, kNow);
      if (c) ids[static_cast<std::size_t>(i)] = c.value().worker_id;
    });
  }
  for (auto& t : threads) t.join();
  const std::set<std::uint32_t> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == kDaemons);
  CHECK(*distinct.rbegin() == kDaemons - 1);  // 0 .. 11, none lost
}

TEST_CASE("sequential: past the layout's workers, a clear error", "[zk][sequential]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  SequentialWorker w1(kRoot, "h:1", 1), w2(kRoot, "h:2", 1), w3(kRoot, "h:3", 1);
  CHECK(acquire(w1, *s, kNow).value().worker_id == 0);
  CHECK(acquire(w2, *s, kNow).value().worker_id == 1);
  const auto third = acquire(w3, *s, kNow);
  REQUIRE(third.has_error());
  CHECK(third.error().code == CoordErrc::workers_exhausted);
  CHECK(third.error().fatal());
  CHECK_THAT(third.error().message, Catch::Contains("worker IDs exhausted") &&
                                        Catch::Contains("recycle") &&
                                        Catch::Contains("new zookeeper.root"));
}

TEST_CASE("recycle: concurrent first boots build one complete pool", "[zk][recycle]") {
  ZooKeeperServer zk;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto s = connect(zk);
      if (RecyclePool(kRoot, 255).ensure(*s, 20s)) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 6);
  auto s = connect(zk);
  CHECK(children(*s, kRoot + "/pool/notuse").size() == 256);
  CHECK(children(*s, kRoot + "/pool/inuse").empty());
}

TEST_CASE("recycle: a pool left half-filled by a crash is completed by the next boot",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  // As a crashed first boot leaves it: some free IDs, one even claimed, not
  // marked complete, its ephemeral lock gone with its session.
  REQUIRE(s->ensure_path(kRoot + "/pool/notuse"));
  REQUIRE(s->ensure_path(kRoot + "/pool/inuse"));
  for (int id : {0, 1, 2})
    REQUIRE(s->create(kRoot + "/pool/notuse/" + std::to_string(id), "{\"floor\":5}"));
  REQUIRE(s->create(kRoot + "/pool/inuse/3", encode(owner_data("h"))));
  REQUIRE(RecyclePool(kRoot, 15).ensure(*s, 5s));
  CHECK(children(*s, kRoot + "/pool/notuse").size() == 15);  // all but 3
  CHECK(children(*s, kRoot + "/pool/inuse") == std::set<std::string>{"3"});
  CHECK(s->get(kRoot + "/pool/notuse/1").value().data == "{\"floor\":5}");  // untouched
}

TEST_CASE("recycle: a fill lock our own session holds (a lost answer) is not waited for",
          "[zk][recycle][liveness]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  REQUIRE(s->ensure_path(kRoot + "/pool"));
  // What a create whose answer was lost leaves: the lock, held by us.
  REQUIRE(s->create(kRoot + "/pool/init-lock", "", CreateMode::ephemeral));
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(RecyclePool(kRoot, 7).ensure(*s, 3s));
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(children(*s, kRoot + "/pool/notuse").size() == 8);

  // Another session's lock is waited for, up to the patience given.
  auto other = connect(zk);
  REQUIRE(other->ensure_path("/b/pool"));
  REQUIRE(other->create("/b/pool/init-lock", "", CreateMode::ephemeral));
  CHECK(RecyclePool("/b", 7).ensure(*s, 300ms).has_error());
}

TEST_CASE(
    "recycle: a daemon waiting for another's fill of the pool watches its lock: one look "
    "however long the fill, and on its way as soon as it goes",
    "[zk][recycle][scale]") {
  ZooKeeperServer zk;
  auto filler = connect(zk);
  REQUIRE(filler->ensure_path(kRoot + "/pool"));
  REQUIRE(filler->create(kRoot + "/pool/init-lock", "", CreateMode::ephemeral));
  auto waiter = connect(zk);
  std::atomic<bool> done{false};
  std::thread waiting([&] {
    if (RecyclePool(kRoot, 7).ensure(*waiter, 30s)) done = true;
  });
  // It read the pool twice, tried the lock, looked whose it is, and
  // watches it: nothing more while the lock is held (polls a second apart
  // would be 3 more in 3 s).
  const bool watching = eventually([&] { return waiter->requests_sent() >= 5; });
  const auto waited_from = waiter->requests_sent();
  bool quiet = true;
  const auto quiet_until = std::chrono::steady_clock::now() + 3s;
  while (quiet && std::chrono::steady_clock::now() < quiet_until) {
    quiet = waiter->requests_sent() == waited_from;  // looked at every 50 ms for 3 s
    std::this_thread::sleep_for(50ms);
  }
  CHECK(watching);
  CHECK(waited_from == 5);
  CHECK(quiet);
  // The filler is done (here: gone without filling): the watch wakes the
  // waiter, which fills the pool itself.
  const auto gone = std::chrono::steady_clock::now();
  REQUIRE(filler->remove(kRoot + "/pool/init-lock", -1));
  REQUIRE(eventually([&] { return done.load(); }, 10s));
  waiting.join();
  CHECK(std::chrono::steady_clock::now() - gone < 3s);  // not a 5 s backstop's wait
  CHECK(children(*waiter, kRoot + "/pool/notuse").size() == 8);
}

TEST_CASE("recycle: 20 concurrent claimers on a pool of 8: 8 owners, 12 exhausted",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  {
    auto s = connect(zk);
    make_pool(*s, 8);
  }
  constexpr int kClaimers = 20;
  std::vector<std::optional<std::uint32_t>> got(kClaimers);
  std::vector<std::optional<CoordErrc>> failed(kClaimers);
  std::vector<std::unique_ptr<ZkSession>> sessions;
  for (int i = 0; i < kClaimers; ++i) sessions.push_back(connect(zk));
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaimers; ++i) {
    threads.emplace_back([&, i] {
      RecyclePool pool(kRoot, 7);
      // Claims race on the move counter: a claimer that keeps losing tries again.
      Result<PoolClaim, CoordError> c = CoordError{CoordErrc::zookeeper, ""};
      for (int attempt = 0; attempt < 20; ++attempt) {
        c = claim(pool, *sessions[static_cast<std::size_t>(i)],
                  owner_data("claimer" + std::to_string(i)));
        if (c || c.error().code != CoordErrc::zookeeper) break;
      }
      if (c)
        got[static_cast<std::size_t>(i)] = c.value().worker_id;
      else
        failed[static_cast<std::size_t>(i)] = c.error().code;
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::uint32_t> owners;
  int exhausted = 0;
  for (int i = 0; i < kClaimers; ++i) {
    if (got[static_cast<std::size_t>(i)]) owners.insert(*got[static_cast<std::size_t>(i)]);
    if (failed[static_cast<std::size_t>(i)] == CoordErrc::pool_exhausted) ++exhausted;
  }
  CHECK(owners.size() == 8);
  CHECK(exhausted == 12);
  auto s = connect(zk);
  CHECK(children(*s, kRoot + "/pool/notuse").empty());
  CHECK(children(*s, kRoot + "/pool/inuse").size() == 8);
  CHECK(children(*s, kRoot + "/alive").size() == 8);
  // Each inuse node names a distinct owner.
  std::set<std::string> instances;
  for (const auto& id : children(*s, kRoot + "/pool/inuse")) {
    instances.insert(
        decode_inuse(s->get(kRoot + "/pool/inuse/" + id).value().data)->owner.instance);
  }
  CHECK(instances.size() == 8);
}

TEST_CASE(
    "recycle: a claim is guarded by the move counter: a floor read before a move is never used",
    "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto other = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  RecyclePool theirs(kRoot, 0);
  const auto plan = pool.plan_claim(*s, 0).value();
  CHECK(plan.floor == 0);
  // Meanwhile someone claims worker ID 0, issues, and gives it back with a
  // floor: notuse/0 is created again, at version 0 again.
  const auto taken = claim(theirs, *other, owner_data("b")).value();
  REQUIRE(theirs.release(*other, taken, kNow + 5000));
  REQUIRE(pool.plan_claim(*s, 0).value().notuse_version == plan.notuse_version);

  const auto stale = pool.commit_claim(*s, plan, owner_data("a"));
  REQUIRE(stale.has_error());
  CHECK(stale.error().code == CoordErrc::lost);
  CHECK(decode_notuse(s->get(kRoot + "/pool/notuse/0").value().data)->floor == kNow + 5000);
  // Claimed afresh, it starts above that floor.
  CHECK(claim(pool, *s, owner_data("a")).value().data.floor == kNow + 5000);
}

TEST_CASE("recycle: an unreadable free floor makes that worker ID unusable, never floor 0",
          "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 2);
  REQUIRE(s->set(kRoot + "/pool/notuse/1", "{\"floor\": \"yesterday\"}", -1));
  for (int i = 0; i < 3; ++i) {  // wherever the random start falls
    const auto a = claim(pool, *s, owner_data("a")).value();
    CHECK(a.worker_id == 0);
    REQUIRE(pool.release(*s, a, kNow));
  }
  const auto a = claim(pool, *s, owner_data("a")).value();
  const auto none = claim(pool, *s, owner_data("b"));
  REQUIRE(none.has_error());
  CHECK(none.error().code == CoordErrc::pool_exhausted);
  CHECK_THAT(none.error().message, Catch::Contains("1 unusable"));
  CHECK(pool.unusable() == std::set<std::uint32_t>{1});
  CHECK(pool.plan_claim(*s, 1).error().code == CoordErrc::unusable);

  const auto status = read_pool_status(*s, kRoot, 1s).value();
  CHECK(status.unusable() == 1);
  CHECK_THAT(to_text(status), Catch::Contains("0 free, 1 unusable") &&
                                  Catch::Contains("unusable (floor unreadable, never claimed): 1"));
  CHECK(to_json(status)["unusable"] == 1);
  (void)a;
}

TEST_CASE("recycle: a free worker ID whose floor is beyond reach is skipped", "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 2);
  REQUIRE(s->set(kRoot + "/pool/notuse/0", encode(NotuseData{kNow + 60'000}), -1));
  CHECK(pool.claim(*s, owner_data("a"), kNow + 5000).value().worker_id == 1);
  const auto far = pool.claim(*s, owner_data("b"), kNow + 5000);
  REQUIRE(far.has_error());
  CHECK(far.error().code == CoordErrc::floors_ahead);
  CHECK(pool.claim(*s, owner_data("b"), kNow + 60'000).value().worker_id == 0);
}

TEST_CASE("recycle: release carries the floor to the next owner", "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  const auto first = claim(pool, *s, owner_data("a")).value();
  CHECK(first.worker_id == 0);
  CHECK(first.answered);
  CHECK(alive_held(*s, 0));
  CHECK(claim(pool, *s, owner_data("b")).error().code == CoordErrc::pool_exhausted);
  REQUIRE(pool.release(*s, first, kNow + 500));
  CHECK_FALSE(alive_held(*s, 0));
  CHECK(decode_notuse(s->get(kRoot + "/pool/notuse/0").value().data)->floor == kNow + 500);
  const auto second = claim(pool, *s, owner_data("b")).value();
  CHECK(second.worker_id == 0);
  CHECK(second.data.floor == kNow + 500);
  // The old owner's node is gone: its heartbeat says so.
  PoolClaim stale = first;
  CHECK(pool.heartbeat(*s, stale, kNow + 600, kNow + 600).error().code == CoordErrc::lost);
}

TEST_CASE(
    "recycle: one live owner: a free ID whose alive node another session holds is not claimed",
    "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto stranger = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  REQUIRE(stranger->create(kRoot + "/alive/0", encode(OwnerToken::fresh("x", 1)),
                           CreateMode::ephemeral));
  const auto refused = claim(pool, *s, owner_data("a"));
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::pool_exhausted);
  CHECK_THAT(refused.error().message, Catch::Contains("still held by a live session"));
  CHECK(children(*s, kRoot + "/pool/notuse") == std::set<std::string>{"0"});
  stranger.reset();  // its session ends: the ID is free to claim
  CHECK(claim(pool, *s, owner_data("a")).value().worker_id == 0);
}

TEST_CASE("recycle: the reaper takes a silent node only once its owner's session has ended",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sb = connect(zk);
  RecyclePool pool_a = make_pool(*sa, 2);
  RecyclePool pool_b(kRoot, 1);
  auto a = claim(pool_a, *sa, owner_data("a")).value();
  auto b = claim(pool_b, *sb, owner_data("b")).value();
  constexpr auto kReclaimAfter = 300ms;

  // For a second A heartbeats every 50 ms while B reaps after each of its own.
  const auto until = std::chrono::steady_clock::now() + 1s;
  int rounds = 0;
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE(pool_a.heartbeat(*sa, a, kNow + rounds, kNow + rounds));
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    CHECK(pool_b.reclaim_stale(*sb, b.mtime_ms, kReclaimAfter, b.worker_id).value().moved == 0);
    std::this_thread::sleep_for(50ms);
    ++rounds;
  }
  // A falls silent, its session still alive: stale by ZooKeeper's clock,
  // but held.
  const std::int64_t a_written = sb->get(pool_a.inuse_path(a.worker_id)).value().stat.mtime_ms;
  REQUIRE(eventually([&] {
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    return b.mtime_ms - a_written > kReclaimAfter.count();
  }));
  CHECK(pool_b.reclaim_stale(*sb, b.mtime_ms, kReclaimAfter, b.worker_id).value().moved == 0);
  CHECK(sa->exists(pool_a.inuse_path(a.worker_id)).value());
  // Its session ends: B returns the ID, with A's last possible instant as floor.
  sa.reset();
  REQUIRE(eventually([&] {
    return pool_b
               .reclaim_stale(*sb, sb->time_of_write(pool_b.clock_path()).value(), kReclaimAfter,
                              std::nullopt)
               .value()
               .moved == 1;
  }));
  const auto freed = decode_notuse(sb->get(pool_b.notuse_path(a.worker_id)).value().data).value();
  CHECK(freed.floor == a.data.ts + a.data.lease_ms);
  auto back = connect(zk);
  CHECK(pool_a.heartbeat(*back, a, kNow, kNow).error().code == CoordErrc::lost);
}

TEST_CASE("recycle: a heartbeat that learnt of a move elsewhere reads first and is not refused",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sc = connect(zk);
  RecyclePool pool_a = make_pool(*sa, 4);
  RecyclePool pool_c(kRoot, 3);
  auto a = claim(pool_a, *sa, owner_data("a")).value();
  auto c = claim(pool_c, *sc, owner_data("c")).value();
  // The first heartbeat reads the count (and leaves its watch); at rest the
  // next is refused by nothing.
  CHECK(pool_a.heartbeat(*sa, a, kNow + 1, kNow + 1).value() == 0);
  CHECK(pool_a.heartbeat(*sa, a, kNow + 2, kNow + 2).value() == 0);
  // C stops: its release moves, bumping the count A remembers.
  const std::uint64_t events = sa->node_events();
  REQUIRE(pool_c.release(*sc, c, kNow + 5).value() == Release::returned);
  REQUIRE(eventually([&] { return sa->node_events() > events; }));
  // Told by the watch, A reads the count before it writes: not refused (a
  // write on the count remembered was, once at every move elsewhere).
  CHECK(pool_a.heartbeat(*sa, a, kNow + 3, kNow + 3).value() == 0);
  CHECK(pool_a.heartbeat(*sa, a, kNow + 4, kNow + 4).value() == 0);
  // A stop that learnt of a move marks its node at once (its move, on the
  // count it remembers, would be refused).
  auto c2 = claim(pool_c, *sc, owner_data("c2")).value();
  const std::uint64_t before = sc->node_events();
  CHECK(pool_c.heartbeat(*sc, c2, kNow + 6, kNow + 6).value() == 0);  // reads, watches
  REQUIRE(pool_a.release(*sa, a, kNow + 7).value() == Release::returned);
  REQUIRE(eventually([&] { return sc->node_events() > before; }));
  const auto sent = sc->requests_sent();
  CHECK(pool_c.release(*sc, c2, kNow + 8).value() == Release::marked);
  // The count, the node, the mark: no move sent to be refused first.
  CHECK(sc->requests_sent() - sent == 3);
}

TEST_CASE("recycle: the reaper leaves a stale node it cannot read", "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 2);
  auto a = claim(pool, *s, owner_data("a")).value();
  const std::uint32_t other = 1 - a.worker_id;
  const std::string inuse = kRoot + "/pool/inuse/" + std::to_string(other);
  REQUIRE(s->remove(kRoot + "/pool/notuse/" + std::to_string(other), -1));
  REQUIRE(s->create(inuse, "garbage"));
  ReapResult r;
  REQUIRE(eventually([&] {  // until it is stale by ZooKeeper's clock
    r = pool.reclaim_stale(*s, s->time_of_write(pool.clock_path()).value(), 50ms, a.worker_id)
            .value();
    return !r.unreadable.empty();
  }));
  CHECK(r.moved == 0);
  CHECK(r.unreadable == std::vector<std::uint32_t>{other});
  CHECK(s->exists(inuse).value());
}

TEST_CASE("recycle: heartbeat after a new session and the reaper racing: exactly one wins",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto sb = connect(zk);
  make_pool(*sb, 2);
  for (int round = 0; round < 10; ++round) {
    RecyclePool pool_a(kRoot, 1);
    RecyclePool pool_b(kRoot, 1);
    auto sa = connect(zk);
    auto a = claim(pool_a, *sa, owner_data("a")).value();
    auto b = claim(pool_b, *sb, owner_data("b")).value();
    sa = connect(zk);  // A's session ends (its alive node goes); A comes back with a new one
    std::this_thread::sleep_for(60ms);  // let A's node age past reclaim_after (50 ms) in ZK time
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    std::atomic<bool> go{false};
    Result<std::uint32_t, CoordError> beat = 0U;
    Result<ReapResult, CoordError> reaped = ReapResult{};
    std::thread ta([&] {
      while (!go) {
      }
      beat = pool_a.heartbeat(*sa, a, kNow + 1, kNow + 1);
    });
    std::thread tb([&] {
      while (!go) {
      }
      reaped = pool_b.reclaim_stale(*sb, b.mtime_ms, 50ms, b.worker_id);
    });
    go = true;
    ta.join();
    tb.join();
    REQUIRE(reaped);
    const bool a_kept = beat.has_value();
    INFO("round " << round);
    CHECK(a_kept != (reaped.value().moved == 1));
    CHECK(sa->exists(pool_a.inuse_path(a.worker_id)).value().has_value() == a_kept);
    CHECK(alive_held(*sa, a.worker_id) == a_kept);
    // Clean up for the next round: a release after another's finds the move
    // count moved, marks its node instead, and the reaper returns it.
    if (a_kept) REQUIRE(pool_a.release(*sa, a, kNow));
    REQUIRE(pool_b.release(*sb, b, kNow));
    const auto returned = pool_b.reclaim_stale(*sb, kNow, 50ms, std::nullopt);
    REQUIRE(returned);
    CHECK(returned.value().moved == 1);  // the marked one, whichever was second
  }
}

TEST_CASE("recycle: a node reclaimed and claimed again is not mistaken for ours", "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  auto old = claim(pool, *s, owner_data("old")).value();    // a claim's version
  REQUIRE(pool.release(*s, old, kNow));                     // as a reaper would
  auto fresh = claim(pool, *s, owner_data("new")).value();  // the same again
  REQUIRE(fresh.version == old.version);
  CHECK(pool.heartbeat(*s, old, kNow, kNow).error().code == CoordErrc::lost);
  CHECK(pool.release(*s, old, kNow).error().code == CoordErrc::lost);
  CHECK(pool.heartbeat(*s, fresh, kNow, kNow));
}

TEST_CASE(
    "recycle: a heartbeat at rest is one request, another's claim changes nothing, and it reads "
    "first after a release elsewhere, told by its watch",
    "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto other = connect(zk);
  RecyclePool pool = make_pool(*s, 4);
  RecyclePool pool_other(kRoot, 3);
  auto mine = claim(pool, *s, owner_data("mine")).value();
  const auto cost = [&](std::int64_t ts) {
    const auto before = s->requests_sent();
    REQUIRE(pool.heartbeat(*s, mine, ts, ts));
    return s->requests_sent() - before;
  };
  // The first reads the count (leaving its watch) and our node.
  CHECK(cost(kNow + 1) == 3);
  CHECK(cost(kNow + 2) == 1);
  // Another daemon's claim checks the move count and leaves it: a rollout's
  // claims do not fail the heartbeats of those already running.
  auto theirs = claim(pool_other, *other, owner_data("theirs")).value();
  CHECK(cost(kNow + 3) == 1);
  // Its release moves the pool; told by the watch, the heartbeat reads the
  // count and our node first, and the write goes through (on the count
  // remembered, it was refused first: 4 requests).
  const std::uint64_t events = s->node_events();
  REQUIRE(pool_other.release(*other, theirs, kNow));
  REQUIRE(eventually([&] { return s->node_events() > events; }));
  CHECK(cost(kNow + 4) == 3);
  CHECK(cost(kNow + 5) == 1);
  CHECK(decode_inuse(s->get(mine.path).value().data)->ts == kNow + 5);
}

TEST_CASE(
    "recycle: a heartbeat that finds the pool's directory gone (a wipe) finds its node lost, "
    "not a failure to retry",
    "[zk][recycle][safety]") {
  // A daemon's session that outlived a wipe, or one ended by it, reaches a
  // tree without the pool: the coordinator reports a loss of history
  // (vanished while the lease runs), which a retry until the lease is out
  // never did (seen in a CI run: an elder that never noticed the wipe).
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 4);
  auto mine = claim(pool, *s, owner_data("mine")).value();
  REQUIRE(pool.heartbeat(*s, mine, kNow + 1, kNow + 1));
  auto other = connect(zk);
  const std::function<void(const std::string&)> remove_tree = [&](const std::string& path) {
    const auto children = other->children(path).value();
    for (const auto& child : children) remove_tree(path + "/" + child);
    REQUIRE(other->remove(path, -1));
  };
  remove_tree(kRoot + "/pool");
  const auto beat = pool.heartbeat(*s, mine, kNow + 2, kNow + 2);
  REQUIRE(beat.has_error());
  CHECK(beat.error().code == CoordErrc::lost);
}

TEST_CASE("recycle: takeover by our old token, only once that run's session has ended",
          "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s_old = connect(zk);
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 4);
  RecyclePool pool_old(kRoot, 3);
  auto before = claim(pool_old, *s_old, owner_data("host")).value();
  REQUIRE(pool_old.heartbeat(*s_old, before, kNow + 10, kNow + 9));

  InuseData restarted = owner_data("host", kNow + 20);
  restarted.floor = kNow + 15;  // from the state file
  // The old run's session lives on (kill -9: until it times out): wait.
  const auto early = pool.take_over(*s, before.worker_id, before.data.owner, restarted, kAnyFloor);
  REQUIRE(early.has_error());
  CHECK(early.error().code == CoordErrc::held);
  CHECK_THAT(early.error().message, Catch::Contains("previous run"));

  s_old.reset();
  const auto after =
      pool.take_over(*s, before.worker_id, before.data.owner, restarted, kAnyFloor).value();
  CHECK(after.worker_id == before.worker_id);
  CHECK(after.data.owner == restarted.owner);
  CHECK(after.data.floor == kNow + 15);
  CHECK(alive_held(*s, before.worker_id));
  auto s_back = connect(zk);
  CHECK(pool_old.heartbeat(*s_back, before, kNow, kNow).error().code == CoordErrc::lost);

  // Asked again (its answer lost): recognised as ours, not "another owner".
  const auto again =
      pool.take_over(*s, before.worker_id, before.data.owner, restarted, kAnyFloor).value();
  CHECK(again.worker_id == before.worker_id);
  CHECK_FALSE(again.answered);

  // A token that is not the node's: lost, the node untouched.
  const auto wrong =
      pool.take_over(*s, before.worker_id, before.data.owner, owner_data("x"), kAnyFloor);
  CHECK(wrong.error().code == CoordErrc::lost);
  CHECK(decode_inuse(s->get(after.path).value().data)->owner == restarted.owner);
}

TEST_CASE("recycle: takeover refused while a stranger's session holds the worker ID",
          "[zk][recycle][safety]") {
  ZooKeeperServer zk;
  auto s_old = connect(zk);
  auto s = connect(zk);
  auto stranger = connect(zk);
  RecyclePool pool = make_pool(*s, 2);
  RecyclePool pool_old(kRoot, 1);
  const auto before = claim(pool_old, *s_old, owner_data("host")).value();
  s_old.reset();
  REQUIRE(stranger->create(kRoot + "/alive/" + std::to_string(before.worker_id),
                           encode(OwnerToken::fresh("stranger", 1)), CreateMode::ephemeral));
  const auto refused =
      pool.take_over(*s, before.worker_id, before.data.owner, owner_data("host"), kAnyFloor);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::lost);
  CHECK_THAT(refused.error().message, Catch::Contains("stranger:1"));
}

TEST_CASE("recycle with digest auth: other clients can read but not change our nodes",
          "[zk][recycle][acl]") {
  ZooKeeperServer zk;
  auto ours = connect(zk, "snowflaked:secret");
  RecyclePool pool = make_pool(*ours, 2);
  const auto c = claim(pool, *ours, owner_data("a")).value();
  std::vector<std::unique_ptr<ZkSession>> strangers;
  strangers.push_back(connect(zk));
  strangers.push_back(connect(zk, "someone:else"));
  for (auto& stranger : strangers) {
    CHECK(stranger->get(c.path));
    CHECK(stranger->set(c.path, "x", -1).error().code == ZkErrc::no_auth);
    CHECK(stranger->remove(c.path, -1).error().code == ZkErrc::no_auth);
    CHECK(stranger->remove(pool.notuse_path(1 - c.worker_id), -1).error().code == ZkErrc::no_auth);
    RecyclePool theirs(kRoot, 1);
    CHECK(claim(theirs, *stranger, owner_data("b")).has_error());
  }
  CHECK(children(*ours, kRoot + "/pool/notuse") ==
        std::set<std::string>{std::to_string(1 - c.worker_id)});
}
