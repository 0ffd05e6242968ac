// Worker-ID leases for holders in other processes (workers/lease_pool.hpp)
// against a real ZooKeeper server: two LeasePools with sessions of their own
// stand for two daemons of one cluster.

#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/workers/lease_pool.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;
const std::string kRoot = "/snowflake/test";
constexpr auto kLong = 60'000ms;
// safety_margin + max_skew: a renewal this far past a lease's end is late.
constexpr auto kMargin = 100ms;
const std::int64_t kEpoch = LayoutSettings{}.epoch_ms;

// 2^worker_bits worker IDs, in units of `unit_ms`.
LeasePoolSettings settings_of(int worker_bits, std::int64_t unit_ms = 1,
                              std::uint32_t reserved = 0) {
  LayoutSettings l;
  l.worker_bits = worker_bits;
  l.sequence_bits = 22 - worker_bits;
  l.time_unit_ms = unit_ms;
  return LeasePoolSettings::cluster(kRoot, IdLayout::create(l, kNow).value(), kMargin, reserved);
}

LeasePool make_leases(ZkSession& s, int worker_bits, std::int64_t unit_ms = 1,
                      std::uint32_t reserved = 0) {
  LeasePool leases(settings_of(worker_bits, unit_ms, reserved));
  REQUIRE(leases.pool().ensure(s, 5s));
  return leases;
}

InuseData node_of(ZkSession& s, LeasePool& leases, std::uint32_t id) {
  return decode_inuse(s.get(leases.pool().inuse_path(id)).value().data).value();
}

std::int64_t free_floor(ZkSession& s, LeasePool& leases, std::uint32_t id) {
  return decode_notuse(s.get(leases.pool().notuse_path(id)).value().data).value().floor;
}

// Takes leases until `id` comes (the others stay taken).
LeaseTerms take_until(LeasePool& leases, ZkSession& s, std::uint32_t id, std::int64_t now,
                      std::chrono::milliseconds duration = kLong) {
  for (int i = 0; i < 8; ++i) {
    auto lease = leases.take(s, "h", duration, now, 5s).value();
    if (lease.worker_id == id) return lease;
  }
  FAIL("worker ID " << id << " never came");
  return {};
}

}  // namespace

TEST_CASE("leases: a take writes the holder and the token's digest, no alive node",
          "[zk][leases]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 2);
  const auto lease = leases.take(*s, "billing-7f9c", kLong, kNow, 5s).value();
  CHECK(lease.worker_id < 4);
  CHECK(lease.first_timestamp_ms == kEpoch);  // never used: from the epoch's first unit
  CHECK(lease.max_timestamp_ms == kNow + kLong.count());
  CHECK(lease.token.size() == 32);
  const InuseData data = node_of(*s, leases, lease.worker_id);
  CHECK(data.owner.host == "billing-7f9c");
  CHECK(LeasePool::is_lease(data.owner));
  CHECK(data.owner == LeasePool::owner_of("billing-7f9c", lease.token));
  CHECK(data.owner.instance.find(lease.token) == std::string::npos);  // the secret stays ours
  CHECK(data.ts == kNow);
  CHECK(data.lease_ms == kLong.count());
  CHECK_FALSE(s->exists(kRoot + "/alive/" + std::to_string(lease.worker_id)).value());
  // Another take gets another worker ID and another token.
  const auto second = leases.take(*s, "billing-7f9c", kLong, kNow, 5s).value();
  CHECK(second.worker_id != lease.worker_id);
  CHECK(second.token != lease.token);
}

TEST_CASE("leases: any daemon renews, by the token alone, in two requests at rest",
          "[zk][leases]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sb = connect(zk);
  LeasePool a = make_leases(*sa, 2);
  LeasePool b(settings_of(2));
  const auto lease = a.take(*sa, "h", kLong, kNow, 5s).value();
  const std::uint32_t id = lease.worker_id;

  const auto cost = [&](LeasePool& pool, ZkSession& s, std::int64_t now) {
    const auto before = s.requests_sent();
    const auto renewed = pool.renew(s, id, lease.token, kLong, now, now - 10).value();
    CHECK(renewed.max_timestamp_ms == now + kLong.count());
    CHECK(renewed.first_timestamp_ms == lease.first_timestamp_ms);
    CHECK(renewed.token.empty());  // told once, at the take
    return s.requests_sent() - before;
  };
  // The write and the root read after it (a floor or fence raised).
  CHECK(cost(a, *sa, kNow + 1) == 2);  // the daemon that wrote it last: no read first
  CHECK(cost(b, *sb, kNow + 2) == 4);  // another: the count and the node, then the write
  CHECK(cost(b, *sb, kNow + 3) == 2);
  CHECK(cost(a, *sa, kNow + 4) == 5);  // its memory is stale: the write fails, read, again
  CHECK(node_of(*sa, a, id).ts == kNow + 4);
  CHECK(node_of(*sa, a, id).hwm == kNow + 4 - 10);

  SECTION("a wrong token, or another worker ID, is refused and changes nothing") {
    const auto version = sa->get(a.pool().inuse_path(id)).value().stat.version;
    CHECK(b.renew(*sb, id, "0123456789abcdef0123456789abcdef", kLong, kNow + 5, std::nullopt)
              .error()
              .code == CoordErrc::lost);
    CHECK(b.renew(*sb, (id + 1) % 4, lease.token, kLong, kNow + 5, std::nullopt).error().code ==
          CoordErrc::lost);
    CHECK(b.renew(*sb, 99, lease.token, kLong, kNow + 5, std::nullopt).error().code ==
          CoordErrc::lost);
    CHECK(b.give_back(*sb, id, "0123456789abcdef0123456789abcdef", kNow).error().code ==
          CoordErrc::lost);
    CHECK(sa->get(a.pool().inuse_path(id)).value().stat.version == version);
  }
}

TEST_CASE(
    "leases: a remembered write is not mistaken for a node taken again under the same name "
    "(the pool's move count)",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto sa = connect(zk);
  auto sb = connect(zk);
  LeasePool a = make_leases(*sa, 1);
  LeasePool b(settings_of(1));
  const auto first = a.take(*sa, "first", kLong, kNow, 5s).value();  // remembered by a
  const auto version = sa->get(a.pool().inuse_path(first.worker_id)).value().stat.version;
  REQUIRE(b.give_back(*sb, first.worker_id, first.token, kNow + 1));
  const auto again = take_until(b, *sb, first.worker_id, kNow + 2);
  // The new node has the version a remembers: only the move count tells.
  REQUIRE(sb->get(b.pool().inuse_path(again.worker_id)).value().stat.version == version);
  const auto stale = a.renew(*sa, first.worker_id, first.token, kLong, kNow + 3, std::nullopt);
  REQUIRE(stale.has_error());
  CHECK(stale.error().code == CoordErrc::lost);
  CHECK(node_of(*sb, b, again.worker_id).owner == LeasePool::owner_of("h", again.token));
}

TEST_CASE("leases: given back with its last stamp, the next holder starts past it",
          "[zk][leases]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 1);
  const auto first = leases.take(*s, "first", kLong, kNow, 5s).value();
  REQUIRE(leases.renew(*s, first.worker_id, first.token, kLong, kNow + 100, kNow + 90));
  REQUIRE(leases.give_back(*s, first.worker_id, first.token, kNow + 150));
  CHECK(free_floor(*s, leases, first.worker_id) == kNow + 150);
  // Given back twice: the second finds no lease.
  CHECK(leases.give_back(*s, first.worker_id, first.token, kNow + 150).error().code ==
        CoordErrc::lost);
  const auto next = take_until(leases, *s, first.worker_id, kNow + 200);
  CHECK(next.first_timestamp_ms == kNow + 151);
  // A renewal that asks no duration keeps the lease's own.
  const auto own = leases.renew(*s, next.worker_id, next.token, 0ms, kNow + 200, std::nullopt);
  CHECK(own.value().duration == kLong);
  CHECK(node_of(*s, leases, next.worker_id).lease_ms == kLong.count());

  SECTION("not saying its last stamp, the floor is the end of its grant") {
    REQUIRE(leases.give_back(*s, next.worker_id, next.token, std::nullopt));
    CHECK(free_floor(*s, leases, next.worker_id) == kNow + 200 + kLong.count());
  }
  SECTION("a last stamp below what a renewal reported does not lower the floor") {
    REQUIRE(leases.renew(*s, next.worker_id, next.token, kLong, kNow + 300, kNow + 290));
    REQUIRE(leases.give_back(*s, next.worker_id, next.token, kNow + 250));
    CHECK(free_floor(*s, leases, next.worker_id) == kNow + 290);
  }
}

TEST_CASE(
    "leases: a renewal never moves the time fence back (a shorter lease, a daemon whose clock "
    "is behind)",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 1);
  const auto lease = leases.take(*s, "h", kLong, kNow, 5s).value();
  const std::int64_t fence = kNow + kLong.count();
  // Through a daemon 120 s behind, for a 1 s lease: the fence stays.
  const auto renewed =
      leases.renew(*s, lease.worker_id, lease.token, 1000ms, kNow - 120'000, std::nullopt).value();
  CHECK(renewed.max_timestamp_ms == fence);
  CHECK(node_of(*s, leases, lease.worker_id).last_possible_ms() == fence);
  REQUIRE(leases.give_back(*s, lease.worker_id, lease.token, std::nullopt));
  CHECK(free_floor(*s, leases, lease.worker_id) == fence);
}

TEST_CASE("leases: in 10 ms units, the first stamp is the start of the unit past the floor",
          "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 1, 10);
  const auto lease = leases.take(*s, "h", kLong, kNow, 5s).value();
  // An earlier holder may have stamped anywhere in kNow + 153's unit.
  REQUIRE(leases.give_back(*s, lease.worker_id, lease.token, kNow + 153));
  const auto next = take_until(leases, *s, lease.worker_id, kNow + 200);
  CHECK(next.first_timestamp_ms == kNow + 160);
  CHECK((next.first_timestamp_ms - kEpoch) % 10 == 0);
}

TEST_CASE(
    "leases: the cluster's migration floor and fence: a take starts past them, a lease from "
    "before one was raised is not renewed",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 2);
  const auto before = leases.take(*s, "before", kLong, kNow, 5s).value();
  const auto root = s->get(kRoot).value();
  SECTION("a migration floor") {
    REQUIRE(s->set(kRoot, with_floor(root.data, MigrationFloor{12345, kNow + 500}), -1));
    const auto after = leases.take(*s, "after", kLong, kNow, 5s).value();
    CHECK(after.first_timestamp_ms == kNow + 501);
  }
  SECTION("a fence") {
    REQUIRE(s->set(
        kRoot,
        with_fence(root.data, ClusterFence{kNow + 700, FenceKind::history_lost, kNow, "test"}),
        -1));
    const auto after = leases.take(*s, "after", kLong, kNow + 600, 5s).value();
    CHECK(after.first_timestamp_ms == kNow + 701);
  }
  // The lease from before: its holder may stamp below the new bound.
  const auto renewed = leases.renew(*s, before.worker_id, before.token, kLong, kNow + 1, {});
  REQUIRE(renewed.has_error());
  CHECK(renewed.error().code == CoordErrc::lost);
  CHECK_THAT(renewed.error().message, Catch::Contains("migration floor or fence"));
}

TEST_CASE(
    "leases: a silent holder's worker ID is reclaimed past its fence, never while renewed nor "
    "before its own lease and the margin",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto reaper_session = connect(zk);
  LeasePool leases = make_leases(*s, 1);
  RecyclePool reaper(kRoot, 1);
  reaper.set_lease_margins(50ms, 50ms);
  constexpr auto kShort = 400ms;
  // The reaper's own reclaim_after is shorter than the lease: a daemon with
  // other timings. The lease and both margins bind it.
  constexpr auto kReclaimAfter = 100ms;
  const auto kept = leases.take(*s, "kept", kShort, kNow, 5s).value();
  const auto silent = leases.take(*s, "silent", kShort, kNow, 5s).value();
  const std::int64_t silent_written =
      s->get(leases.pool().inuse_path(silent.worker_id)).value().stat.mtime_ms;
  std::int64_t t = kNow;
  // `kept` renews every 50 ms while the reaper looks.
  REQUIRE(eventually([&] {
    t += 50;
    REQUIRE(leases.renew(*s, kept.worker_id, kept.token, kShort, t, t));
    const auto zk_now = reaper_session->time_of_write(reaper.clock_path()).value();
    const auto moved = reaper.reclaim_stale(*reaper_session, zk_now, kReclaimAfter, std::nullopt);
    REQUIRE(moved);
    if (moved.value().moved == 0) {
      std::this_thread::sleep_for(50ms);
      return false;
    }
    // Not before the silent one's lease and both margins had passed.
    CHECK(zk_now - silent_written > kShort.count() + 100);
    return true;
  }));
  CHECK(s->exists(leases.pool().inuse_path(kept.worker_id)).value());
  CHECK_FALSE(s->exists(leases.pool().inuse_path(silent.worker_id)).value());
  // The floor is the silent holder's fence: the last stamp its lease allowed.
  CHECK(free_floor(*s, leases, silent.worker_id) == silent.max_timestamp_ms);
  CHECK(leases.renew(*s, silent.worker_id, silent.token, kShort, t, std::nullopt).error().code ==
        CoordErrc::lost);
  const auto next = leases.take(*s, "next", kShort, t, 5s).value();
  CHECK(next.worker_id == silent.worker_id);
  CHECK(next.first_timestamp_ms == silent.max_timestamp_ms + 1);
}

TEST_CASE(
    "leases: a renewal after the lease and the margin are over by ZooKeeper's records is lost",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 1);
  constexpr auto kShort = 100ms;
  const auto lease = leases.take(*s, "late", kShort, kNow, 5s).value();
  std::int64_t written = s->get(leases.pool().inuse_path(lease.worker_id)).value().stat.mtime_ms;
  // Over, but within the margin: renewed (the two writes may carry two
  // servers' clocks, and the holder's deadline came before the first).
  std::int64_t now = 0;
  REQUIRE(eventually([&] {
    now = s->time_of_write(leases.pool().clock_path()).value();
    return now - written > kShort.count();
  }));
  if (now - written < kShort.count() + kMargin.count() / 2) {
    REQUIRE(leases.renew(*s, lease.worker_id, lease.token, kShort, kNow + 1, kNow));
    written = s->get(leases.pool().inuse_path(lease.worker_id)).value().stat.mtime_ms;
  }
  REQUIRE(eventually([&] {
    return s->time_of_write(leases.pool().clock_path()).value() - written >
           kShort.count() + kMargin.count();
  }));
  const auto late = leases.renew(*s, lease.worker_id, lease.token, kShort, kNow + 2, kNow);
  REQUIRE(late.has_error());
  CHECK(late.error().code == CoordErrc::lost);
  CHECK_THAT(late.error().message, Catch::Contains("after the last grant"));
  // Back in the pool at once, above the last grant's fence.
  CHECK(free_floor(*s, leases, lease.worker_id) >= lease.max_timestamp_ms);
}

TEST_CASE("leases: a full pool refuses clearly and hands nothing out twice, the reserve kept",
          "[zk][leases]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 2, 1, /*reserved=*/1);
  std::set<std::uint32_t> ids;
  for (int i = 0; i < 3; ++i) ids.insert(leases.take(*s, "h", kLong, kNow, 5s).value().worker_id);
  CHECK(ids.size() == 3);
  const auto refused = leases.take(*s, "h", kLong, kNow, 5s);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::pool_exhausted);
  CHECK_THAT(refused.error().message, Catch::Contains("leases.reserved_worker_ids"));
  CHECK(s->children(kRoot + "/pool/notuse").value().size() == 1);  // the daemons' one
}

TEST_CASE("leases: a free worker ID whose floor is past a short lease's end is not handed out",
          "[zk][leases]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool leases = make_leases(*s, 1);
  const auto other = leases.take(*s, "other", kLong, kNow, 5s).value();
  const auto lease = leases.take(*s, "h", kLong, kNow, 5s).value();
  REQUIRE(leases.give_back(*s, lease.worker_id, lease.token, kNow + 3000));
  // Within the 5 s it may wait, but past a 1 s lease: refused, floor kept.
  const auto refused = leases.take(*s, "h", 1000ms, kNow, 5s);
  REQUIRE(refused.has_error());
  CHECK(refused.error().code == CoordErrc::floors_ahead);
  CHECK(free_floor(*s, leases, lease.worker_id) == kNow + 3000);
  CHECK(leases.take(*s, "h", kLong, kNow, 5s).value().first_timestamp_ms == kNow + 3001);
  (void)other;
}

TEST_CASE(
    "leases: the reaper reads a node without an alive node once, then not again until it may be "
    "stale",
    "[zk][leases]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto r = connect(zk);
  LeasePool leases = make_leases(*s, 2);
  RecyclePool reaper(kRoot, 3);
  for (int i = 0; i < 3; ++i) REQUIRE(leases.take(*s, "h", kLong, kNow, 5s));
  const std::int64_t zk_now = r->time_of_write(reaper.clock_path()).value();
  const auto pass = [&](std::int64_t now) {
    const auto before = r->requests_sent();
    REQUIRE(reaper.reclaim_stale(*r, now, 100ms, std::nullopt).value().moved == 0);
    return r->requests_sent() - before;
  };
  const auto first = pass(zk_now);
  CHECK(pass(zk_now + 1000) == first - 3);  // the three nodes not read again
  // Once they may be stale (their lease, 60 s, has passed), read again,
  // and taken back.
  CHECK(
      reaper.reclaim_stale(*r, zk_now + kLong.count() + 1000, 100ms, std::nullopt).value().moved ==
      3);
}

TEST_CASE(
    "leases: a named pool: its own worker IDs, the first stamp at a whole second past the floor, "
    "bounded by the cluster's fence and not by its migration floor",
    "[zk][leases][safety]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  LeasePool cluster = make_leases(*s, 2);  // the cluster's root and pool
  LeasePool named(LeasePoolSettings::named(kRoot, "sony", 1, kMargin));
  REQUIRE(named.pool().ensure(*s, 5s));
  const auto a = named.take(*s, "a", kLong, kNow, 5s).value();
  const auto b = named.take(*s, "b", kLong, kNow, 5s).value();
  CHECK(a.worker_bits == 1);
  CHECK(a.worker_id != b.worker_id);
  CHECK(a.first_timestamp_ms == 1000);  // never used: past 0, at a whole second
  CHECK(named.take(*s, "c", kLong, kNow, 5s).error().code == CoordErrc::pool_exhausted);
  // The cluster's pool is untouched: one ID space each.
  CHECK(s->children(kRoot + "/pool/inuse").value().empty());
  // Given back at a stamp inside a second: the next holder starts at the
  // next whole second (a 10 ms or 1 s unit holding the stamp has ended).
  const std::int64_t last = kNow + 123;
  REQUIRE(named.give_back(*s, a.worker_id, a.token, last));
  const std::int64_t next_second = (last / 1000 + 1) * 1000;
  const auto root = s->get(kRoot).value();
  SECTION("the migration floor is the cluster's IDs': not a named pool's") {
    REQUIRE(s->set(kRoot, with_floor(root.data, MigrationFloor{12345, kNow + 50'000}), -1));
    const auto c = named.take(*s, "c", kLong, kNow, 5s).value();
    CHECK(c.worker_id == a.worker_id);
    CHECK(c.first_timestamp_ms == next_second);
    CHECK(named.renew(*s, b.worker_id, b.token, kLong, kNow + 1, {}).has_value());
  }
  SECTION("the fence binds it, past a whole second") {
    REQUIRE(s->set(
        kRoot,
        with_fence(root.data, ClusterFence{kNow + 3'500, FenceKind::history_lost, kNow, "test"}),
        -1));
    const auto c = named.take(*s, "c", kLong, kNow + 600, 5s).value();
    CHECK(c.first_timestamp_ms == ((kNow + 3'500) / 1000 + 1) * 1000);
    const auto renewed = named.renew(*s, b.worker_id, b.token, kLong, kNow + 1, {});
    REQUIRE(renewed.has_error());
    CHECK(renewed.error().code == CoordErrc::lost);
  }
}
