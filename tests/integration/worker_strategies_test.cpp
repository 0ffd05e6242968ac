// The worker-ID strategies and the cluster layout check against a real
// ZooKeeper server: concurrency by real threads with their own sessions.

#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/coord/cluster_layout.hpp"
#include "snowflake/coord/recycle_pool.hpp"
#include "snowflake/coord/sequential_worker.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;
const std::string kRoot = "/snowflake/test";

std::unique_ptr<ZkSession> connect(const ZooKeeperServer& zk,
                                   std::optional<std::string> auth = std::nullopt) {
  return connect_session(zk.hosts(), std::move(auth));
}

InuseData owner_data(const std::string& name, std::int64_t ts = kNow) {
  return {OwnerToken::fresh(name, 8080), 0, ts, 0, 3000};
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

}  // namespace

TEST_CASE("cluster layout: stored by the first daemon, a different one refused naming both",
          "[zk][layout]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const LayoutSettings ours{};
  REQUIRE(check_cluster_layout(*s, kRoot, ours));
  CHECK(decode_layout(s->get(kRoot).value().data) == ours);
  CHECK(check_cluster_layout(*s, kRoot, ours));  // the same layout again: fine

  LayoutSettings other = ours;
  other.worker_bits = 8;
  other.sequence_bits = 14;
  const auto refused = check_cluster_layout(*s, kRoot, other);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::layout_mismatch);
  CHECK(refused.error().fatal());
  CHECK_THAT(refused.error().message, Catch::Contains("worker_bits 10, sequence_bits 12") &&
                                          Catch::Contains("worker_bits 8, sequence_bits 14"));

  SECTION("an empty root made by an operator is claimed") {
    REQUIRE(s->create("/empty", ""));
    REQUIRE(check_cluster_layout(*s, "/empty", other));
    CHECK(decode_layout(s->get("/empty").value().data) == other);
  }
}

TEST_CASE("sequential: a fresh node, reused after a restart, its data written", "[zk][sequential]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  SequentialWorker a(kRoot, "hostA:8080", 1023);
  const auto first = a.acquire(*s, kNow).value();
  CHECK(first.worker_id == 0);
  CHECK(first.path == kRoot + "/forever/hostA:8080-0000000000");
  const auto data = decode_sequential(s->get(first.path).value().data).value();
  CHECK(data.host == "hostA");
  CHECK(data.port == 8080);
  CHECK(data.ts == kNow);

  REQUIRE(a.heartbeat(*s, first, kNow + 10, kNow + 7));
  SequentialWorker b(kRoot, "hostB:8080", 1023);
  CHECK(b.acquire(*s, kNow).value().worker_id == 1);

  // A restart: a new session, the same name.
  s = connect(zk);
  const auto again = SequentialWorker(kRoot, "hostA:8080", 1023).acquire(*s, kNow + 20).value();
  CHECK(again.worker_id == 0);
  CHECK(again.path == first.path);
  CHECK(again.floor >= kNow + 10);  // the last heartbeat's time
  CHECK(children(*s, kRoot + "/forever").size() == 2);
}

TEST_CASE("sequential: concurrent first boots get distinct worker IDs", "[zk][sequential]") {
  ZooKeeperServer zk;
  constexpr int kDaemons = 12;
  std::vector<std::uint32_t> ids(kDaemons, 9999);
  std::vector<std::thread> threads;
  for (int i = 0; i < kDaemons; ++i) {
    threads.emplace_back([&, i] {
      auto s = connect(zk);
      auto c = SequentialWorker(kRoot, "host" + std::to_string(i) + ":1", 1023).acquire(*s, kNow);
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
  CHECK(SequentialWorker(kRoot, "h:1", 1).acquire(*s, kNow).value().worker_id == 0);
  CHECK(SequentialWorker(kRoot, "h:2", 1).acquire(*s, kNow).value().worker_id == 1);
  const auto third = SequentialWorker(kRoot, "h:3", 1).acquire(*s, kNow);
  REQUIRE(third.has_error());
  CHECK(third.error().code == CoordErrc::workers_exhausted);
  CHECK(third.error().fatal());
  CHECK_THAT(third.error().message, Catch::Contains("worker IDs exhausted") &&
                                        Catch::Contains("recycle"));
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
  for (int id : {0, 1, 2}) REQUIRE(s->create(kRoot + "/pool/notuse/" + std::to_string(id), "{\"floor\":5}"));
  REQUIRE(s->create(kRoot + "/pool/inuse/3", encode(owner_data("h"))));
  REQUIRE(RecyclePool(kRoot, 15).ensure(*s, 5s));
  CHECK(children(*s, kRoot + "/pool/notuse").size() == 15);  // all but 3
  CHECK(children(*s, kRoot + "/pool/inuse") == std::set<std::string>{"3"});
  CHECK(s->get(kRoot + "/pool/notuse/1").value().data == "{\"floor\":5}");  // untouched
}

TEST_CASE("recycle: 20 concurrent claimers on a pool of 8: 8 owners, 12 exhausted", "[zk][recycle]") {
  ZooKeeperServer zk;
  {
    auto s = connect(zk);
    make_pool(*s, 8);
  }
  constexpr int kClaimers = 20;
  std::vector<std::optional<std::uint32_t>> got(kClaimers);
  std::vector<std::optional<CoordErrc>> failed(kClaimers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaimers; ++i) {
    threads.emplace_back([&, i] {
      auto s = connect(zk);
      RecyclePool pool(kRoot, 7);
      auto c = pool.claim(*s, owner_data("claimer" + std::to_string(i)));
      if (c) got[static_cast<std::size_t>(i)] = c.value().worker_id;
      else failed[static_cast<std::size_t>(i)] = c.error().code;
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
  // Each inuse node names a distinct owner.
  std::set<std::string> instances;
  for (const auto& id : children(*s, kRoot + "/pool/inuse")) {
    instances.insert(decode_inuse(s->get(kRoot + "/pool/inuse/" + id).value().data)->owner.instance);
  }
  CHECK(instances.size() == 8);
}

TEST_CASE("recycle: release carries the floor to the next owner", "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  const auto first = pool.claim(*s, owner_data("a")).value();
  CHECK(first.worker_id == 0);
  CHECK(pool.claim(*s, owner_data("b")).error().code == CoordErrc::pool_exhausted);
  REQUIRE(pool.release(*s, first, kNow + 500));
  CHECK(decode_notuse(s->get(kRoot + "/pool/notuse/0").value().data)->floor == kNow + 500);
  const auto second = pool.claim(*s, owner_data("b")).value();
  CHECK(second.worker_id == 0);
  CHECK(second.data.floor == kNow + 500);
  // The old owner's node is gone: its heartbeat says so.
  PoolClaim stale = first;
  CHECK(pool.heartbeat(*s, stale, kNow + 600, kNow + 600).error().code == CoordErrc::lost);
}

TEST_CASE("recycle: the reaper never takes a heartbeating node, and takes a silent one",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sb = connect(zk);
  RecyclePool pool_a = make_pool(*sa, 2);
  RecyclePool pool_b(kRoot, 1);
  auto a = pool_a.claim(*sa, owner_data("a")).value();
  auto b = pool_b.claim(*sb, owner_data("b")).value();
  constexpr auto kReclaimAfter = 300ms;

  // For a second A heartbeats every 50 ms while B reaps after each of its own.
  const auto until = std::chrono::steady_clock::now() + 1s;
  int rounds = 0;
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE(pool_a.heartbeat(*sa, a, kNow + rounds, kNow + rounds));
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    CHECK(pool_b.reclaim_stale(*sb, b.mtime_ms, kReclaimAfter, b.worker_id).value() == 0);
    std::this_thread::sleep_for(50ms);
    ++rounds;
  }
  // A falls silent: B returns its ID once ZooKeeper's clock says it is stale.
  REQUIRE(eventually([&] {
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    return pool_b.reclaim_stale(*sb, b.mtime_ms, kReclaimAfter, b.worker_id).value() == 1;
  }));
  const auto freed = decode_notuse(sb->get(pool_b.notuse_path(a.worker_id)).value().data).value();
  CHECK(freed.floor == a.data.ts + a.data.lease_ms);  // A's last possible instant
  CHECK(pool_a.heartbeat(*sa, a, kNow, kNow).error().code == CoordErrc::lost);
}

TEST_CASE("recycle: heartbeat and reaper racing: exactly one wins", "[zk][recycle]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sb = connect(zk);
  make_pool(*sa, 2);
  for (int round = 0; round < 10; ++round) {
    RecyclePool pool_a(kRoot, 1);
    RecyclePool pool_b(kRoot, 1);
    auto a = pool_a.claim(*sa, owner_data("a")).value();
    auto b = pool_b.claim(*sb, owner_data("b")).value();
    std::this_thread::sleep_for(60ms);  // let A's node age past reclaim_after (50 ms) in ZK time
    REQUIRE(pool_b.heartbeat(*sb, b, kNow, kNow));
    std::atomic<bool> go{false};
    Result<void, CoordError> beat = outcome::success();
    Result<int, CoordError> reaped = 0;
    std::thread ta([&] {
      while (!go) {}
      beat = pool_a.heartbeat(*sa, a, kNow + 1, kNow + 1);
    });
    std::thread tb([&] {
      while (!go) {}
      reaped = pool_b.reclaim_stale(*sb, b.mtime_ms, 50ms, b.worker_id);
    });
    go = true;
    ta.join();
    tb.join();
    REQUIRE(reaped);
    const bool a_kept = beat.has_value();
    INFO("round " << round);
    CHECK(a_kept != (reaped.value() == 1));
    CHECK(sa->exists(pool_a.inuse_path(a.worker_id)).value().has_value() == a_kept);
    // Clean up for the next round.
    if (a_kept) REQUIRE(pool_a.release(*sa, a, kNow));
    REQUIRE(pool_b.release(*sb, b, kNow));
  }
}

TEST_CASE("recycle: a node reclaimed and claimed again is not mistaken for ours",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 1);
  auto old = pool.claim(*s, owner_data("old")).value();  // version 0
  REQUIRE(pool.release(*s, old, kNow));                    // as a reaper would
  auto fresh = pool.claim(*s, owner_data("new")).value();  // version 0 again
  REQUIRE(fresh.version == old.version);
  CHECK(pool.heartbeat(*s, old, kNow, kNow).error().code == CoordErrc::lost);
  CHECK(pool.release(*s, old, kNow).error().code == CoordErrc::lost);
  CHECK(pool.heartbeat(*s, fresh, kNow, kNow));
}

TEST_CASE("recycle: a restarted daemon takes its worker ID back by its old token",
          "[zk][recycle]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  RecyclePool pool = make_pool(*s, 4);
  auto before = pool.claim(*s, owner_data("host")).value();
  REQUIRE(pool.heartbeat(*s, before, kNow + 10, kNow + 9));

  InuseData restarted = owner_data("host", kNow + 20);
  restarted.floor = kNow + 15;  // from the state file
  const auto after = pool.take_over(*s, before.worker_id, before.data.owner, restarted).value();
  CHECK(after.worker_id == before.worker_id);
  CHECK(after.data.owner == restarted.owner);
  CHECK(after.data.floor == kNow + 15);
  CHECK(pool.heartbeat(*s, before, kNow, kNow).error().code == CoordErrc::lost);

  // A token that is not the node's: lost, the node untouched.
  const auto wrong = pool.take_over(*s, before.worker_id, before.data.owner, owner_data("x"));
  CHECK(wrong.error().code == CoordErrc::lost);
  CHECK(decode_inuse(s->get(after.path).value().data)->owner == restarted.owner);
}

TEST_CASE("recycle with digest auth: other clients can read but not change our nodes",
          "[zk][recycle][acl]") {
  ZooKeeperServer zk;
  auto ours = connect(zk, "snowflaked:secret");
  RecyclePool pool = make_pool(*ours, 2);
  const auto c = pool.claim(*ours, owner_data("a")).value();
  std::vector<std::unique_ptr<ZkSession>> strangers;
  strangers.push_back(connect(zk));
  strangers.push_back(connect(zk, "someone:else"));
  for (auto& stranger : strangers) {
    CHECK(stranger->get(c.path));
    CHECK(stranger->set(c.path, "x", -1).error().code == ZkErrc::no_auth);
    CHECK(stranger->remove(c.path, -1).error().code == ZkErrc::no_auth);
    CHECK(stranger->remove(pool.notuse_path(1 - c.worker_id), -1).error().code == ZkErrc::no_auth);
    RecyclePool theirs(kRoot, 1);
    CHECK(theirs.claim(*stranger, owner_data("b")).has_error());
  }
  CHECK(children(*ours, kRoot + "/pool/notuse") ==
        std::set<std::string>{std::to_string(1 - c.worker_id)});
}
