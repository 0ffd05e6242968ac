// The candidates' line (workers/candidate_line.hpp) against a real ZooKeeper
// server: the reaper's role, one holder among many sessions, handed on when
// its session ends, and a pass of the pool only by the holder; the
// claimers' turn, handed on when its holder leaves.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "../../src/workers/recycle_strategy.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/workers/candidate_line.hpp"
#include "snowflake/workers/recycle_pool.hpp"
#include "snowflake/zk/cluster_tree.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

const std::string kReaperRoot = "/snowflake/reaper";
const std::string kReaperDir = tree::pool_reapers(kReaperRoot);

// One daemon's view: its session, its role, and the watch that wakes it.
struct RoleDaemon {
  std::unique_ptr<ZkSession> zk;
  CandidateLine role{kReaperDir};
  std::shared_ptr<std::atomic<int>> fired = std::make_shared<std::atomic<int>>(0);
  int seen = 0;

  explicit RoleDaemon(ZooKeeperServer& server) { reconnect(server); }
  // A new session, with the watch that wakes this daemon.
  void reconnect(ZooKeeperServer& server) {
    zk = connect(server);
    zk->set_node_watcher([fired = fired](const std::string& path) {
      if (path.starts_with(kReaperDir + "/")) ++*fired;
    });
  }
  // As the coordinator does: a fired watch makes the next look ask ZooKeeper.
  bool holds() {
    if (const int now = fired->load(); now != seen) {
      seen = now;
      role.look_again();
    }
    return role.held(*zk).value();
  }
};

std::vector<std::unique_ptr<RoleDaemon>> role_daemons(ZooKeeperServer& server, int n) {
  std::vector<std::unique_ptr<RoleDaemon>> daemons;
  for (int i = 0; i < n; ++i) daemons.push_back(std::make_unique<RoleDaemon>(server));
  return daemons;
}

int role_holders(std::vector<std::unique_ptr<RoleDaemon>>& daemons) {
  return static_cast<int>(
      std::count_if(daemons.begin(), daemons.end(), [](auto& d) { return d && d->holds(); }));
}

std::size_t role_candidates(ZkSession& zk) { return zk.children(kReaperDir).value().size(); }

// `n` owners of the pool (`max_id`) under kReaperRoot, each with a session
// and a pool of its own and a worker ID it claimed.
struct PoolOwners {
  std::vector<std::unique_ptr<ZkSession>> sessions;
  std::vector<RecyclePool> pools;
  std::vector<PoolClaim> claims;
};

PoolOwners claimed_by_owners(ZooKeeperServer& server, int n, std::uint32_t max_id) {
  PoolOwners owners;
  owners.pools.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    owners.sessions.push_back(connect(server));
    owners.pools.emplace_back(kReaperRoot, max_id);
    owners.claims.push_back(
        owners.pools.back()
            .claim(*owners.sessions.back(), {OwnerToken::fresh("o", 1), 0, 1, 0, 1000}, INT64_MAX)
            .value());
  }
  return owners;
}

}  // namespace

TEST_CASE("reaper role: one holder of three, handed to exactly one other when its session ends",
          "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto daemons = role_daemons(server, 3);
  // A cluster made by an older version: no directory for candidates yet.
  CHECK_FALSE(daemons[0]->zk->exists(kReaperDir).value());
  CHECK(role_holders(daemons) == 1);
  CHECK(daemons[0]->holds());  // the first to stand
  CHECK(role_candidates(*daemons[1]->zk) == 3);
  // Asked again with nothing changed: the same answer, and not a request.
  std::vector<std::uint64_t> sent;
  for (auto& d : daemons) sent.push_back(d->zk->requests_sent());
  CHECK(role_holders(daemons) == 1);
  for (std::size_t i = 0; i < daemons.size(); ++i)
    CHECK(daemons[i]->zk->requests_sent() == sent[i]);

  daemons[0].reset();  // its session closes, its candidate goes
  REQUIRE(eventually([&] { return daemons[1]->holds(); }));
  CHECK_FALSE(daemons[2]->holds());
  CHECK(daemons[2]->fired->load() == 0);  // its predecessor lives: it was not woken
  CHECK(role_holders(daemons) == 1);

  // The session after the holder's: the holder's end wakes only it, and the
  // last one standing holds the role.
  daemons[1].reset();
  REQUIRE(eventually([&] { return daemons[2]->holds(); }));
  CHECK(role_holders(daemons) == 1);
}

TEST_CASE("reaper role: a candidate that is not the lowest, whose predecessor ends, holds the role",
          "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto daemons = role_daemons(server, 3);
  CHECK(role_holders(daemons) == 1);
  // The middle one goes: the last now watches the first, and still waits.
  daemons[1].reset();
  REQUIRE(eventually([&] { return daemons[2]->fired->load() > 0; }));
  CHECK_FALSE(daemons[2]->holds());
  CHECK(daemons[0]->holds());
  daemons[0].reset();
  REQUIRE(eventually([&] { return daemons[2]->holds(); }));
}

TEST_CASE("reaper role: a second candidate of our own session does not make us wait for ourselves",
          "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto daemons = role_daemons(server, 2);
  REQUIRE(daemons[0]->holds());
  // A create of ours whose answer was lost, applied all the same: a
  // candidate of our session that held() has not seen.
  RoleDaemon& b = *daemons[1];
  const std::string prefix =
      fmt::format("{:016x}-", static_cast<std::uint64_t>(b.zk->session_id()));
  REQUIRE(b.zk->create(tree::child(kReaperDir, prefix), "", CreateMode::ephemeral_sequential));
  CHECK_FALSE(b.holds());
  // One of ours is left: the lowest, which the listing found by name.
  CHECK(role_candidates(*b.zk) == 2);
  daemons[0].reset();
  REQUIRE(eventually([&] { return b.holds(); }));
}

TEST_CASE("reaper role: a new session of the holder stands again behind the others",
          "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto daemons = role_daemons(server, 2);
  REQUIRE(daemons[0]->holds());
  CHECK_FALSE(daemons[1]->holds());
  // Daemon 0's session ends and it opens another: the role is not its any
  // more, whatever it held before, and it stands again behind daemon 1.
  auto& a = *daemons[0];
  a.reconnect(server);
  CHECK_FALSE(a.holds());
  REQUIRE(eventually([&] { return daemons[1]->holds(); }));
  CHECK(role_holders(daemons) == 1);
}

TEST_CASE("claimers' line: each leave hands the turn to exactly the next, woken by its watch",
          "[zk][recycle][line]") {
  ZooKeeperServer server;
  auto daemons = role_daemons(server, 3);
  CHECK(role_holders(daemons) == 1);
  RoleDaemon& first = *daemons[0];
  REQUIRE(first.holds());
  REQUIRE(first.role.leave(*first.zk));
  CHECK_FALSE(first.role.in_line(*first.zk));
  CHECK(role_candidates(*first.zk) == 2);
  REQUIRE(eventually([&] { return daemons[1]->holds(); }));
  CHECK(daemons[2]->fired->load() == 0);  // only the next was woken
  CHECK_FALSE(daemons[2]->holds());
  // Leaving again, out of the line: nothing sent.
  const auto sent = first.zk->requests_sent();
  REQUIRE(first.role.leave(*first.zk));
  CHECK(first.zk->requests_sent() == sent);
  // Back in line: behind the two still there.
  CHECK_FALSE(first.holds());
  REQUIRE(daemons[1]->role.leave(*daemons[1]->zk));
  REQUIRE(eventually([&] { return daemons[2]->holds(); }));
  CHECK_FALSE(first.holds());
  REQUIRE(daemons[2]->role.leave(*daemons[2]->zk));
  REQUIRE(eventually([&] { return first.holds(); }));
}

TEST_CASE(
    "claimers' line: a claimer's patience is its own, fixed as it joins, longer by each claimer "
    "ahead",
    "[zk][recycle][line]") {
  // Claimers that never claim (frozen in their turn, their sessions alive):
  // 6 candidates of one session, all ahead of whoever joins next.
  ZooKeeperServer server;
  const std::string root = "/snowflake/patience";
  auto stuck = connect(server);
  REQUIRE(stuck->ensure_path(tree::pool_claimers(root)));
  for (int i = 0; i < 6; ++i) {
    REQUIRE(stuck->create(tree::child(tree::pool_claimers(root), "00000000000000aa-"), "",
                          CreateMode::ephemeral_sequential));
  }
  const auto settings = [&] {
    RecycleSettings s;
    s.root = root;
    s.max_worker_id = 7;
    s.lease = 1000ms;
    s.reclaim_after = 5000ms;
    s.pool_patience = 5000ms;
    s.takeover_patience = 1000ms;
    s.line_patience = 2000ms;
    s.line_patience_per_claimer = 100ms;
    return s;
  };
  auto zk = connect(server);
  RecycleStrategy strategy(settings(), OwnerToken::fresh("patient", 1), std::nullopt);
  // The BootClock time the coordinator passes is ours to set here: nothing waits.
  const auto joined = BootClock::now();
  const auto at = [&](std::chrono::milliseconds after) {
    return AcquireRequest{1'700'000'000'000, joined + after, INT64_MAX};
  };
  const auto in_line = [&](std::chrono::milliseconds after) {
    auto tried = strategy.acquire(*zk, at(after));
    return !tried && tried.error().code == CoordErrc::in_line;
  };
  auto waiting = strategy.acquire(*zk, at(0ms));
  REQUIRE_FALSE(waiting);
  CHECK(waiting.error().code == CoordErrc::in_line);
  CHECK_THAT(waiting.error().message, Catch::Contains("6 ahead"));
  // 2 s and 6 x 100 ms from joining: not a moment before, whoever leaves meanwhile.
  REQUIRE(in_line(2599ms));
  // One ahead leaves (its watch wakes us): the line moved, the deadline stays.
  auto names = stuck->children(tree::pool_claimers(root)).value();
  std::sort(names.begin(), names.end());  // the stuck ones' prefix sorts below ours
  REQUIRE(names.front().starts_with("00000000000000aa-"));
  REQUIRE(stuck->remove(tree::child(tree::pool_claimers(root), names.front()), -1));
  strategy.claim_watch_fired();
  REQUIRE(in_line(2599ms));
  const auto claimed = strategy.acquire(*zk, at(2600ms));
  REQUIRE(claimed);
  CHECK(claimed.value().worker_id <= 7);
  // Out of the line with the claim: the 5 still stuck are all that is left.
  CHECK(stuck->children(tree::pool_claimers(root)).value().size() == 5);
}

TEST_CASE("reaper: a pass reads only inuse nodes without an alive node", "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto zk = connect(server);
  RecyclePool pool(kReaperRoot, 3);
  REQUIRE(pool.ensure(*zk, 5s));
  PoolOwners three = claimed_by_owners(server, 3, 3);
  auto& owners = three.sessions;
  const auto& claims = three.claims;
  int asked = 0;
  const auto zk_now = [&]() -> Result<std::int64_t, CoordError> {
    ++asked;
    return INT64_MAX / 2;  // everything is stale by this clock
  };
  // Every owner's session lives: nothing to read, nothing moved, no clock
  // asked; two listings, however many owners.
  const auto before = zk->requests_sent();
  auto rest = pool.reclaim_stale(*zk, zk_now, 10ms, std::nullopt).value();
  CHECK(zk->requests_sent() - before == 2);
  CHECK(rest.moved == 0);
  CHECK(rest.in_use == 3);
  CHECK(asked == 0);
  CHECK(pool.in_use_seen() == 3u);
  // One owner's session ends: its node alone is taken back.
  owners[1].reset();
  REQUIRE(eventually([&] { return !zk->exists(pool.alive().path(claims[1].worker_id)).value(); }));
  auto pass = pool.reclaim_stale(*zk, zk_now, 10ms, std::nullopt).value();
  CHECK(pass.moved == 1);
  CHECK(pass.in_use == 2);
  CHECK(asked == 1);
  CHECK(zk->exists(pool.notuse_path(claims[1].worker_id)).value());
  CHECK(zk->exists(pool.inuse_path(claims[0].worker_id)).value());
}

TEST_CASE(
    "reaper: a pass takes back its stale worker IDs in one move, so a running daemon's "
    "heartbeat reads once, not once per ID, and one held or moved meanwhile is left alone",
    "[zk][recycle][reaper]") {
  ZooKeeperServer server;
  auto zk = connect(server);
  RecyclePool pool(kReaperRoot, 7);
  REQUIRE(pool.ensure(*zk, 5s));
  PoolOwners six = claimed_by_owners(server, 6, 7);
  auto& owners = six.sessions;
  auto& claims = six.claims;
  auto& theirs = six.pools;
  // Owner 0 keeps running and beats once (its move count known); the other
  // five end.
  REQUIRE(theirs[0].heartbeat(*owners[0], claims[0], 2, 2));
  for (int i = 1; i < 6; ++i) owners[i].reset();
  REQUIRE(eventually([&] { return zk->children(pool.alive().dir()).value().size() == 1; }));
  const auto moves = [&] { return zk->get(tree::inuse_dir(kReaperRoot)).value().stat.version; };
  const int moves_before = moves();
  const std::uint64_t events = owners[0]->node_events();

  // While the pass reads, a new session of the run that held one ID makes
  // its alive node again (held), and another ID's free node appears (as an
  // odd restore could leave it): each is left, the other three go back.
  auto back = connect(server);
  const std::uint32_t held_id = claims[3].worker_id;
  const std::uint32_t odd_id = claims[4].worker_id;
  const auto zk_now = [&]() -> Result<std::int64_t, CoordError> {
    REQUIRE(back->create(pool.alive().path(held_id), "", CreateMode::ephemeral));
    REQUIRE(zk->create(pool.notuse_path(odd_id), encode(NotuseData{1})));
    return INT64_MAX / 2;
  };
  const auto pass = pool.reclaim_stale(*zk, zk_now, 10ms, std::nullopt).value();
  CHECK(pass.moved == 3);
  CHECK(pass.held == std::vector<std::uint32_t>{held_id});
  CHECK(pass.in_use == 3);
  CHECK(moves() == moves_before + 1);
  for (int i : {1, 2, 5}) CHECK(zk->exists(pool.notuse_path(claims[i].worker_id)).value());
  CHECK(zk->exists(pool.inuse_path(held_id)).value());
  CHECK(zk->exists(pool.inuse_path(odd_id)).value());

  // Owner 0's next heartbeat: told of the move by its watch on the count,
  // it reads first, and is not refused.
  REQUIRE(eventually([&] { return owners[0]->node_events() > events; }));
  const auto sent = owners[0]->requests_sent();
  CHECK(theirs[0].heartbeat(*owners[0], claims[0], 3, 3).value() == 0);
  CHECK(owners[0]->requests_sent() - sent == 3);  // the count, its node, the multi
}
