// The sequences thread against a real ZooKeeper server
// (sequence_store/sequence_supplier.hpp): tags created while it runs are served, the
// first range is taken when a request asks, two daemons' numbers never
// meet, buffered numbers are served with ZooKeeper stopped, and a clean
// stop gives the unused rest back; its holder node, raises dropped through.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "../support/node_acl.hpp"
#include "../support/polling.hpp"
#include "../support/sequence_nodes.hpp"
#include "../support/session_expiry.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

const std::string kSupplierRoot = "/snowflake/supply";

SequenceSupplierOptions options_for(const ZooKeeperServer& zk, const std::string& run) {
  SequenceSupplierOptions o;
  o.zookeeper.hosts = zk.hosts();
  o.zookeeper.session_timeout = 4000ms;
  o.zookeeper.connect_timeout = 2000ms;
  o.root = kSupplierRoot;
  o.run = run;
  o.period = 20ms;
  return o;
}

// `count` numbers of `tag` as a request takes them: asks for a range when dry.
std::vector<std::int64_t> take(SequenceRegistry& registry, const std::string& tag,
                               std::size_t count) {
  std::vector<std::int64_t> out;
  SequenceEntry* e = registry.find(tag);
  if (!e) return out;
  while (out.size() < count) {
    if (e->buffer.take(count - out.size(), out) > 0) continue;
    e->wanted.store(true);
    registry.request_refill();
    // Until the supplier adds a range (the server waits on a wake instead).
    if (!eventually([&] { return e->buffer.take(count - out.size(), out) > 0; }, 5000ms)) break;
  }
  return out;
}

}  // namespace

TEST_CASE("sequence supplier: a tag created while it runs is served, from its start",
          "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1000, 10));
  SequenceRegistry registry(8);
  SequenceSupplier supplier(options_for(zk, "runA"), registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  // Nothing taken before a request asks.
  CHECK(read_sequence(*admin, kSupplierRoot, "order").value().node.next == 1000);
  CHECK(take(registry, "order", 3) == std::vector<std::int64_t>{1000, 1001, 1002});

  REQUIRE(create_sequence(*admin, kSupplierRoot, "invoice", 7, 1));
  REQUIRE(eventually([&] { return registry.find("invoice") != nullptr; }));
  CHECK(take(registry, "invoice", 2) == std::vector<std::int64_t>{7, 8});
  supplier.stop();
}

TEST_CASE("sequence supplier: two daemons' numbers never meet, and each one's increase",
          "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 5));
  SequenceRegistry reg_a(4), reg_b(4);
  SequenceSupplier a(options_for(zk, "runA"), reg_a), b(options_for(zk, "runB"), reg_b);
  a.start();
  b.start();
  REQUIRE(eventually([&] { return reg_a.find("order") && reg_b.find("order"); }));
  std::vector<std::int64_t> got_a, got_b;
  std::thread ta([&] {
    for (int i = 0; i < 400; ++i) {
      auto n = take(reg_a, "order", 3);
      got_a.insert(got_a.end(), n.begin(), n.end());
    }
  });
  std::thread tb([&] {
    for (int i = 0; i < 400; ++i) {
      auto n = take(reg_b, "order", 3);
      got_b.insert(got_b.end(), n.begin(), n.end());
    }
  });
  ta.join();
  tb.join();
  a.stop();
  b.stop();
  CHECK(got_a.size() == 1200);
  CHECK(got_b.size() == 1200);
  CHECK(std::is_sorted(got_a.begin(), got_a.end()));
  CHECK(std::is_sorted(got_b.begin(), got_b.end()));
  std::set<std::int64_t> all(got_a.begin(), got_a.end());
  all.insert(got_b.begin(), got_b.end());
  CHECK(all.size() == 2400);
  CHECK(*all.begin() >= 1);
}

TEST_CASE(
    "sequence supplier: buffered numbers are served with ZooKeeper stopped, and a clean "
    "stop gives the rest back",
    "[sequence]") {
  ZooKeeperServer zk;
  {
    auto admin = connect(zk);
    REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 100, 1000));
  }
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options_for(zk, "runA"), registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  CHECK(take(registry, "order", 1) == std::vector<std::int64_t>{100});
  // The first range, and the next one behind it once a tenth is used.
  REQUIRE(take(registry, "order", 150).size() == 150);
  REQUIRE(eventually([&] { return registry.find("order")->buffer.state().queued > 0; }));
  const std::int64_t held = registry.find("order")->buffer.state().current_left +
                            registry.find("order")->buffer.state().queued;
  CHECK(held >= 1000);

  zk.stop();
  REQUIRE(eventually([&] { return !supplier.connected(); }));
  const auto during = take(registry, "order", 900);
  REQUIRE(during.size() == 900);
  CHECK(during.front() == 251);
  zk.start();
  REQUIRE(eventually([&] { return supplier.connected(); }, 20s));
  const auto after = take(registry, "order", 1);
  REQUIRE(after.size() == 1);
  supplier.stop();
  auto admin = connect(zk);
  // The newest range was this daemon's: next is back at its first unused number.
  CHECK(read_sequence(*admin, kSupplierRoot, "order").value().node.next == after.front() + 1);
}

namespace {

// What `seq raise` waits for: no holder node says its run may still hand out
// a number <= above of `tag` without having dropped it.
bool raise_confirmed(ZkSession& zk, const std::string& tag, std::int64_t above) {
  const auto holders = read_holders(zk, kSupplierRoot);
  if (!holders) return false;
  return std::all_of(holders.value().begin(), holders.value().end(), [&](const Holder& h) {
    return h.record && !holds_unconfirmed(*h.record, tag, above);
  });
}

}  // namespace

TEST_CASE(
    "sequence supplier: its holder node names what it holds, says when a raise was dropped "
    "through, and goes at a clean stop",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 1000));
  SequenceRegistry registry(4);
  auto options = options_for(zk, "runA");
  options.owner = "test:1 pid 1";
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  // No range yet: no holder node.
  CHECK(read_holders(*admin, kSupplierRoot).value().empty());
  REQUIRE(take(registry, "order", 5).size() == 5);
  auto holders = read_holders(*admin, kSupplierRoot).value();
  REQUIRE(holders.size() == 1);
  CHECK(holders[0].run == "runA");
  REQUIRE(holders[0].record);
  CHECK(holders[0].record->owner == "test:1 pid 1");
  const HeldSequence held = holders[0].record->tags.at("order");
  CHECK(held.from <= 6);
  CHECK(held.to >= 1001);
  CHECK_FALSE(raise_confirmed(*admin, "order", 300));

  REQUIRE(raise_sequence(*admin, kSupplierRoot, "order", 300));
  REQUIRE(eventually([&] { return raise_confirmed(*admin, "order", 300); }));
  const auto after = take(registry, "order", 1);
  REQUIRE(after.size() == 1);
  CHECK(after.front() == 301);  // the rest of its range above the floor
  supplier.stop();
  CHECK(read_holders(*admin, kSupplierRoot).value().empty());
}

TEST_CASE("sequence supplier: the holder node of the state directory's previous run is deleted",
          "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 10));
  // As a run killed with -9 leaves it.
  REQUIRE(publish_holder(*admin, kSupplierRoot, "runOld",
                         HolderRecord{"old:1 pid 2", {{"order", {1, 11, 0, 10, 0}}}}));
  REQUIRE(publish_holder(*admin, kSupplierRoot, "runElse",
                         HolderRecord{"else:1 pid 3", {{"order", {11, 21, 0, 10, 0}}}}));
  SequenceRegistry registry(4);
  auto options = options_for(zk, "runNew");
  options.previous_run = "runOld";
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] {
    const auto h = read_holders(*admin, kSupplierRoot);
    return h && h.value().size() == 1;
  }));
  // Another run's node (it may be running, cut off) stays.
  CHECK(read_holders(*admin, kSupplierRoot).value()[0].run == "runElse");
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: raises racing takes under load: once a raise is confirmed, no number "
    "at or below it is handed out, and none twice",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  // Small ranges: takes happen all the time, racing the raises.
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 40));
  SequenceRegistry reg_a(4), reg_b(4);
  SequenceSupplier a(options_for(zk, "runA"), reg_a), b(options_for(zk, "runB"), reg_b);
  a.start();
  b.start();
  REQUIRE(eventually([&] { return reg_a.find("order") && reg_b.find("order"); }));
  std::atomic<std::int64_t> confirmed{0};
  std::atomic<std::int64_t> highest{0};
  std::atomic<bool> done{false};
  struct Seen {
    std::vector<std::int64_t> numbers;
    int below_confirmed = 0;
  };
  Seen seen_a, seen_b;
  const auto load = [&](SequenceRegistry& reg, Seen& seen) {
    while (!done.load()) {
      const std::int64_t floor = confirmed.load();  // confirmed before this take began
      const auto got = take(reg, "order", 3);
      for (const auto n : got) {
        if (n <= floor) ++seen.below_confirmed;
        std::int64_t h = highest.load();
        while (n > h && !highest.compare_exchange_weak(h, n)) {
        }
      }
      seen.numbers.insert(seen.numbers.end(), got.begin(), got.end());
    }
  };
  std::thread ta([&] { load(reg_a, seen_a); });
  std::thread tb([&] { load(reg_b, seen_b); });
  int raises = 0, unconfirmed = 0;
  for (; raises < 25; ++raises) {
    // (No REQUIRE while the load threads run: a throw would skip their join.)
    if (!eventually([&] { return highest.load() > confirmed.load() + 20; })) break;
    // Into what the daemons hold: above what was handed out, below their ranges' ends.
    const std::int64_t above = highest.load() + 15;
    if (!raise_sequence(*admin, kSupplierRoot, "order", above)) break;
    if (!eventually([&] { return raise_confirmed(*admin, "order", above); }, 10s)) {
      ++unconfirmed;
      break;
    }
    confirmed.store(above);
  }
  done.store(true);
  ta.join();
  tb.join();
  a.stop();
  b.stop();
  CHECK(raises == 25);
  CHECK(unconfirmed == 0);
  CHECK(seen_a.below_confirmed == 0);
  CHECK(seen_b.below_confirmed == 0);
  std::set<std::int64_t> all(seen_a.numbers.begin(), seen_a.numbers.end());
  all.insert(seen_b.numbers.begin(), seen_b.numbers.end());
  CHECK(all.size() == seen_a.numbers.size() + seen_b.numbers.size());
  CHECK(std::is_sorted(seen_a.numbers.begin(), seen_a.numbers.end()));
}

namespace {

// The dropped-through figure run `run`'s holder node gives `tag`; -1: no such node or tag.
std::int64_t dropped_through(ZkSession& zk, const std::string& run, const std::string& tag) {
  const auto holders = read_holders(zk, kSupplierRoot);
  if (!holders) return -1;
  for (const Holder& h : holders.value()) {
    if (h.run != run || !h.record) continue;
    const auto held = h.record->tags.find(tag);
    if (held != h.record->tags.end()) return held->second.dropped_through;
  }
  return -1;
}

// Ranges of exactly `size` numbers (the tag's step), each taken once the one
// handed out is used up to `refill_at`.
SequenceSupplierOptions with_ranges_of(SequenceSupplierOptions o, std::int64_t size,
                                       double refill_at) {
  o.sizing.max_step = size;
  o.sizing.refill_at = refill_at;
  return o;
}

}  // namespace

TEST_CASE(
    "sequence supplier: another daemon's takes cost a holder no request, and a raise is "
    "acknowledged by both for 2 reads and the acknowledgement",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 10));
  SequenceRegistry reg_a(4), reg_b(4);
  SequenceSupplier a(with_ranges_of(options_for(zk, "runA"), 10, 0.1), reg_a);
  // B keeps its one range (9 tenths of it are used before it takes another).
  SequenceSupplier b(with_ranges_of(options_for(zk, "runB"), 10, 0.9), reg_b);
  a.start();
  b.start();
  REQUIRE(eventually([&] { return reg_a.find("order") && reg_b.find("order"); }));
  REQUIRE(take(reg_b, "order", 1) == std::vector<std::int64_t>{1});  // B holds [1, 11)
  REQUIRE(take(reg_a, "order", 1).size() == 1);                      // and A a range above
  // Every request of B's take, its naming and its floor read went out before
  // the range joined its buffer.
  const std::uint64_t b_before = b.requests_sent();
  const std::int32_t version_before = read_sequence(*admin, kSupplierRoot, "order").value().version;

  // A takes 20 ranges.
  std::int32_t version = version_before;
  for (int i = 0; i < 400 && version < version_before + 20; ++i) {
    if (take(reg_a, "order", 5).size() != 5) break;
    version = read_sequence(*admin, kSupplierRoot, "order").value().version;
  }
  REQUIRE(version >= version_before + 20);
  CHECK(b.requests_sent() == b_before);

  // A raise into B's range (A holds nothing at or below it, but holds the tag).
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "order", 5));
  REQUIRE(eventually([&] {
    return dropped_through(*admin, "runA", "order") >= 5 &&
           dropped_through(*admin, "runB", "order") >= 5;
  }));
  REQUIRE(eventually([&] { return b.requests_sent() >= b_before + 3; }));
  // ZooKeeper delivers a session's watch events in order: had any of A's
  // takes fired a watch of B's, B would have read for it before it read
  // for the raise. The floor child's watch set again, the node read, the
  // holder node written: nothing for the takes.
  CHECK(b.requests_sent() - b_before == 3);
  CHECK(take(reg_b, "order", 1) == std::vector<std::int64_t>{6});
  a.stop();
  b.stop();
}

TEST_CASE(
    "sequence supplier: a tag an older version made has no floor child: a raise makes it in "
    "its multi, and the holder drops and acknowledges",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  // As an older version's seq create left it: the node alone.
  REQUIRE(admin->ensure_path(kSupplierRoot + "/sequences"));
  REQUIRE(admin->create(sequence_path(kSupplierRoot, "order"), encode(SequenceNode{1, 10, 0, {}})));
  const std::string child = sequence_path(kSupplierRoot, "order") + "/floor";
  SequenceRegistry registry(4);
  SequenceSupplier supplier(with_ranges_of(options_for(zk, "runA"), 10, 0.9), registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  REQUIRE(take(registry, "order", 1) == std::vector<std::int64_t>{1});
  CHECK_FALSE(admin->exists(child).value());

  REQUIRE(raise_sequence(*admin, kSupplierRoot, "order", 5));
  const auto made = admin->try_get(child).value();
  REQUIRE(made);
  CHECK(made->data == R"({"floor":5,"frozen":false})");
  REQUIRE(eventually([&] { return dropped_through(*admin, "runA", "order") >= 5; }));
  CHECK(take(registry, "order", 1) == std::vector<std::int64_t>{6});

  // A raise that changes nothing, the child saying so already, writes nothing.
  const std::int32_t version = read_sequence(*admin, kSupplierRoot, "order").value().version;
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "order", 3));
  CHECK(read_sequence(*admin, kSupplierRoot, "order").value().version == version);
  CHECK(admin->try_get(child).value()->stat.version == made->stat.version);
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: a raise that writes the node alone (an older seq raise) is "
    "acknowledged at the holder's next read of the node, not before",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 1));
  REQUIRE(create_sequence(*admin, kSupplierRoot, "other", 1, 1));
  SequenceRegistry registry(4);
  // Ranges of 1: with its one number handed out, it takes the next.
  SequenceSupplier supplier(with_ranges_of(options_for(zk, "runA"), 1, 0.5), registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") && registry.find("other"); }));
  REQUIRE(take(registry, "order", 1) == std::vector<std::int64_t>{1});
  REQUIRE(take(registry, "other", 1) == std::vector<std::int64_t>{1});
  REQUIRE(eventually([&] { return registry.find("order")->buffer.state().current_left == 1; }));

  // What an older `seq raise` writes: the node alone, the child untouched.
  const auto read = read_sequence(*admin, kSupplierRoot, "order").value();
  REQUIRE(admin->set(sequence_path(kSupplierRoot, "order"), encode(raised(read.node, 2)),
                     read.version));
  // A raise of the other tag, by this version, after it: its watch event
  // comes after any the first write fired, and its acknowledgement is
  // written once both are handled.
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "other", 1));
  REQUIRE(eventually([&] { return dropped_through(*admin, "runA", "other") >= 1; }));
  CHECK(dropped_through(*admin, "runA", "order") < 2);

  // Its next take reads the node: the floor is dropped through and acknowledged.
  CHECK(take(registry, "order", 1) == std::vector<std::int64_t>{2});  // bought before it knew
  REQUIRE(eventually([&] { return dropped_through(*admin, "runA", "order") >= 2; }));
  CHECK(take(registry, "order", 1).front() > 2);
  supplier.stop();
}

namespace {

// Asks for `tag` as a request does, until the supplier says it is frozen.
bool frozen_when_asked(SequenceRegistry& registry, const std::string& tag) {
  SequenceEntry* e = registry.find(tag);
  if (!e) return false;
  e->wanted.store(true);
  registry.request_refill();
  return eventually([&] { return e->frozen.load(); }, 5000ms);
}

// A supplier with a loss history of its own and two tags: "held", of which
// it holds [1, 11), and "untaken", never taken from. The tests of a loss
// start here.
struct HeldAndUntaken {
  ZooKeeperServer zk;
  std::shared_ptr<ZkSession> admin = connect(zk);
  ClusterHistory history;
  SequenceRegistry registry{4};
  std::unique_ptr<SequenceSupplier> supplier;

  HeldAndUntaken() {
    REQUIRE(create_sequence(*admin, kSupplierRoot, "held", 1, 10));
    REQUIRE(create_sequence(*admin, kSupplierRoot, "untaken", 1, 10));
    auto options = with_ranges_of(options_for(zk, "runA"), 10, 0.9);
    options.history = &history;
    supplier = std::make_unique<SequenceSupplier>(options, registry);
    supplier->start();
    REQUIRE(eventually([&] { return registry.find("held") && registry.find("untaken"); }));
    REQUIRE(take(registry, "held", 1) == std::vector<std::int64_t>{1});
  }
};

}  // namespace

TEST_CASE(
    "sequence supplier: a frozen tag it never took from thaws at a raise made after its "
    "session was replaced (a shared session the coordinator replaced)",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", 1, 10));
  REQUIRE(freeze_sequence_above(*admin, kSupplierRoot, "order", 5, SequenceNode{1, 10, 0, {}}));
  std::mutex current_mutex;
  std::shared_ptr<ZkSession> current = connect(zk);
  auto options = options_for(zk, "runA");
  options.shared_session = [&] {
    std::lock_guard lock(current_mutex);
    return current;
  };
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  REQUIRE(frozen_when_asked(registry, "order"));  // its floor watched, on the first session

  // The coordinator's session expires and it makes the next; the supplier
  // takes it up at its next look. The floor's watch went with the old one.
  std::shared_ptr<ZkSession> old;
  {
    std::lock_guard lock(current_mutex);
    old = std::exchange(current, connect(zk));
  }
  REQUIRE(expire_session(zk.hosts(), *old));
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "order", 20));
  const auto got = take(registry, "order", 1);
  REQUIRE(got.size() == 1);
  CHECK(got.front() > 20);
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: a raise while the coordinator has not settled a loss yet thaws the "
    "tag once it is settled, held or never taken from",
    "[sequence]") {
  HeldAndUntaken f;
  auto& admin = f.admin;
  auto& history = f.history;
  auto& registry = f.registry;

  // The loss: every tag frozen here at once, the held one in ZooKeeper too.
  REQUIRE(history.report(HistoryLoss::wiped, "a test's loss", 0));
  REQUIRE(eventually([&] { return registry.find("held")->frozen.load(); }));
  REQUIRE(eventually([&] { return registry.find("untaken")->frozen.load(); }));
  REQUIRE(eventually([&] {
    const auto node = read_sequence(*admin, kSupplierRoot, "held");
    return node && node.value().node.frozen;
  }));
  // The operator's raises, read (and acknowledged) while the loss is open:
  // still frozen then.
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "held", 30));
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "untaken", 40));
  REQUIRE(eventually([&] { return dropped_through(*admin, "runA", "held") >= 30; }));
  REQUIRE(eventually([&] {
    const auto node = read_sequence(*admin, kSupplierRoot, "untaken");
    return node && node.value().node.floor >= 40 && !node.value().node.frozen;
  }));
  CHECK(registry.find("held")->frozen.load());

  history.settle();  // the coordinator fenced the cluster: no watch fires for that
  const auto held = take(registry, "held", 1);
  REQUIRE(held.size() == 1);
  CHECK(held.front() > 30);
  const auto untaken = take(registry, "untaken", 1);
  REQUIRE(untaken.size() == 1);
  CHECK(untaken.front() > 40);
  f.supplier->stop();
}

TEST_CASE(
    "sequence supplier: a loss reported and settled between two of its passes still freezes "
    "every tag, and each is read again",
    "[sequence]") {
  HeldAndUntaken f;
  auto& admin = f.admin;
  auto& history = f.history;
  auto& registry = f.registry;

  // Open and over at once (no pass of the supplier is likely to see it open).
  REQUIRE(history.report(HistoryLoss::wiped, "a test's loss", 0));
  history.settle();
  // The held tag: frozen in ZooKeeper above what it held, until a raise.
  REQUIRE(eventually([&] {
    const auto node = read_sequence(*admin, kSupplierRoot, "held");
    return node && node.value().node.frozen && node.value().node.floor >= 10;
  }));
  CHECK(take(registry, "held", 1).empty());
  // The other: read again, and its node is not frozen (nothing froze it here).
  const auto untaken = take(registry, "untaken", 1);
  REQUIRE(untaken.size() == 1);
  CHECK(untaken.front() == 1);
  REQUIRE(raise_sequence(*admin, kSupplierRoot, "held", 30));
  const auto held = take(registry, "held", 1);
  REQUIRE(held.size() == 1);
  CHECK(held.front() > 30);
  f.supplier->stop();
}

TEST_CASE(
    "sequence supplier: a tag it held stays frozen after a loss until its node is frozen "
    "above what it held, while ZooKeeper refuses that write, and another held tag goes on",
    "[sequence]") {
  HeldAndUntaken f;
  // "untaken" taken from too: both held, [1, 11) each.
  REQUIRE(take(f.registry, "untaken", 1) == std::vector<std::int64_t>{1});
  // The held tag's node read-only: this daemon's freeze above its range is
  // refused (NOAUTH), its reads answered with the node unfrozen, as a
  // restored copy's would be.
  const std::string held_node = sequence_path(kSupplierRoot, "held");
  REQUIRE(set_node_writable(f.zk.hosts(), held_node, false));
  REQUIRE(f.history.report(HistoryLoss::wiped, "a test's loss", 0));
  REQUIRE(eventually([&] { return f.registry.find("held")->frozen.load(); }));
  const auto frozen_above = [&](const std::string& tag, std::int64_t floor) {
    const auto node = read_sequence(*f.admin, kSupplierRoot, tag);
    return node && node.value().node.frozen && node.value().node.floor >= floor;
  };
  // The other's freeze lands though this one's is refused.
  REQUIRE(eventually([&] { return frozen_above("untaken", 10); }));
  f.history.settle();
  REQUIRE(raise_sequence(*f.admin, kSupplierRoot, "untaken", 40));
  const auto other = take(f.registry, "untaken", 1);
  REQUIRE(other.size() == 1);
  CHECK(other.front() > 40);
  // Its raise stands (not frozen again by the next passes), and the refused
  // tag stays frozen here while its freeze is owed.
  CHECK_FALSE(eventually([&] { return frozen_above("untaken", 0); }, 500ms));
  CHECK(f.registry.find("held")->frozen.load());

  // Writable again: frozen in ZooKeeper above what it held, then thawed by
  // the operator's raise.
  REQUIRE(set_node_writable(f.zk.hosts(), held_node, true));
  REQUIRE(eventually([&] { return frozen_above("held", 10); }));
  CHECK(f.registry.find("held")->frozen.load());
  REQUIRE(raise_sequence(*f.admin, kSupplierRoot, "held", 30));
  const auto held = take(f.registry, "held", 1);
  REQUIRE(held.size() == 1);
  CHECK(held.front() > 30);
  f.supplier->stop();
}

TEST_CASE(
    "sequence supplier: a frozen tag whose node is gone is not read again until it is made "
    "again, then served from its start",
    "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "gone", 1, 10));
  ClusterHistory history;
  auto options = options_for(zk, "runA");
  options.history = &history;
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("gone") != nullptr; }));
  // As a wipe leaves it: the node and its floor child gone.
  const std::string node = sequence_path(kSupplierRoot, "gone");
  REQUIRE(admin->remove(node + "/floor", -1));
  REQUIRE(admin->remove(node, -1));
  REQUIRE(history.report(HistoryLoss::wiped, "a test's loss", 0));
  REQUIRE(eventually([&] { return registry.find("gone")->frozen.load(); }));
  // Its floor read once (and its watch set), not every pass (20 ms here).
  REQUIRE(eventually(
      [&] {
        const std::uint64_t before = supplier.requests_sent();
        return !eventually([&] { return supplier.requests_sent() > before; }, 500ms);
      },
      5s));
  const std::uint64_t quiet = supplier.requests_sent();
  CHECK_FALSE(eventually([&] { return supplier.requests_sent() > quiet + 4; }, 1000ms));

  // Made again (the runbook's seq create), the loss settled: served from its start.
  REQUIRE(create_sequence(*admin, kSupplierRoot, "gone", 1, 10));
  history.settle();
  const auto got = take(registry, "gone", 1);
  REQUIRE(got.size() == 1);
  CHECK(got.front() == 1);
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: a tag's template is fixed from its first range, and a node that "
    "says another later gives only a gap",
    "[sequence][template]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  SequenceNode first{1, 4, 0, {}};
  first.number_template = "ORD-{n:04}";
  first.end = 10000;
  REQUIRE(create_sequence(*admin, kSupplierRoot, "order", first));
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options_for(zk, "runA"), registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("order") != nullptr; }));
  SequenceEntry& entry = *registry.find("order");
  CHECK(entry.printed.load() == nullptr);  // nothing taken, nothing known
  CHECK(take(registry, "order", 2) == std::vector<std::int64_t>{1, 2});
  const FilledTemplate* printed = entry.printed.load();
  REQUIRE(printed != nullptr);
  CHECK(printed->format(2) == "ORD-0002");

  // Written by hand (or made again after a loss) with a wider template: a
  // range taken under it would print wider than this daemon's '{n:04}'.
  auto read = read_sequence(*admin, kSupplierRoot, "order").value();
  SequenceNode changed = read.node;
  changed.number_template = "{n:08}";
  changed.end = 99'999'999;
  changed.next = std::max<std::int64_t>(changed.next, 20'000);
  REQUIRE(admin->set(sequence_path(kSupplierRoot, "order"), encode(changed), read.version));
  // What it held before is still handed out; nothing taken after the change.
  std::vector<std::int64_t> out;
  entry.buffer.take(100, out);
  entry.wanted.store(true);
  registry.request_refill();
  // One take (a gap), and no more: the node's next moves once, none joins.
  REQUIRE(eventually(
      [&] { return read_sequence(*admin, kSupplierRoot, "order").value().node.next > 20'000; }));
  const auto after_gap = read_sequence(*admin, kSupplierRoot, "order").value().node.next;
  for (int i = 0; i < 5; ++i) {
    registry.request_refill();
    // Each pass of the supplier (20 ms) would take again: a second take shows by now.
    CHECK_FALSE(eventually(
        [&] {
          return read_sequence(*admin, kSupplierRoot, "order").value().node.next != after_gap;
        },
        100ms));
  }
  out.clear();
  CHECK(entry.buffer.take(100, out) == 0);
  CHECK(entry.printed.load() == printed);
  supplier.stop();
}

namespace {

// A zone whose day does not end within the next hours (the test's period
// must not change under it).
std::string zone_far_from_midnight() {
  const auto hour = std::chrono::duration_cast<std::chrono::hours>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count() %
                    24;
  return hour >= 12 ? "Asia/Tokyo" : "UTC";  // 09:00 to 21:00 there, or 00:00 to 12:00
}

// A daily sequence `tag` served by the supplier: its current period's slot
// once it has numbers, and one taken from it.
PeriodSlot* serving_period(ZkSession& admin, SequenceRegistry& registry, const std::string& tag) {
  REQUIRE(create_sequence(admin, kSupplierRoot, tag,
                          daily_definition(zone_far_from_midnight(), "{yyyy}{MM}{dd}-{n}")));
  REQUIRE(eventually([&] { return registry.find(tag) != nullptr; }));
  SequenceEntry* parent = registry.find(tag);
  parent->wanted.store(true);
  registry.request_refill();
  PeriodSlot* slot = nullptr;
  std::vector<std::int64_t> got;
  REQUIRE(eventually([&] {
    const auto* periodic = parent->periodic.load();
    // Today's slot stays in the lookup (and so whole) for the test's length.
    slot = periodic ? periodic->slot_at(wall_ms_now(), periodic->hold()) : nullptr;
    return slot && slot->entry.buffer.take(1, got) == 1;
  }));
  CHECK(got == std::vector<std::int64_t>{1});
  return slot;
}

}  // namespace

TEST_CASE(
    "sequence supplier: a period's node gone is a removal where its definition says so (let go, "
    "no loss), and with the definition gone too a loss (frozen, made again above what was held)",
    "[sequence][period]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  ClusterHistory history;
  SequenceRegistry registry(4);
  auto options = options_for(zk, "runA");
  options.history = &history;
  SequenceSupplier supplier(options, registry);
  supplier.start();

  // Removed by another daemon after its retention: node, floor child and
  // the definition's removed_through in one multi.
  PeriodSlot* removed = serving_period(*admin, registry, "inv");
  const std::string key = removed->period.key;
  // Again while the supplier's takes move the period's node meanwhile.
  REQUIRE(eventually([&] {
    const auto definition = read_sequence(*admin, kSupplierRoot, "inv").value();
    return remove_period(*admin, kSupplierRoot, "inv", definition, key).value();
  }));
  REQUIRE(eventually([&] { return removed->closed.load(); }));
  CHECK_FALSE(removed->entry.frozen.load());
  CHECK(history.episodes() == 0);
  CHECK_FALSE(admin->try_get(sequence_path(kSupplierRoot, "inv@" + key)).value());

  // Both gone, as ZooKeeper losing them leaves it (nothing deletes a
  // definition): a loss, and the period made again, frozen, above [1, 11).
  PeriodSlot* lost = serving_period(*admin, registry, "lost");
  for (const std::string& tag : {"lost@" + key, std::string("lost")}) {
    REQUIRE(admin->remove(sequence_path(kSupplierRoot, tag) + "/floor", -1));
    REQUIRE(admin->remove(sequence_path(kSupplierRoot, tag), -1));
  }
  // The loss is counted before the supplier's thread freezes each tag:
  // waited for by the freeze, the later of the two.
  REQUIRE(eventually([&] { return lost->entry.frozen.load(); }));
  CHECK(history.episodes() == 1);
  CHECK_FALSE(lost->closed.load());
  REQUIRE(eventually([&] {
    const auto node = read_sequence(*admin, kSupplierRoot, "lost@" + key);
    return node && node.value().node.frozen && node.value().node.next > 10;
  }));
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: a segment handed to another process is named in its holder node, so a "
    "ZooKeeper rolled back below it is a loss that freezes the tag above the segment",
    "[sequence][cosid]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "seg", 1, 10));
  const std::string path = sequence_path(kSupplierRoot, "seg");
  const auto backup = admin->get(path);  // the node as a backup taken now holds it
  REQUIRE(backup);
  ClusterHistory history;
  std::mutex current_mutex;
  std::shared_ptr<ZkSession> current = connect(zk);
  auto options = options_for(zk, "runA");
  options.history = &history;
  options.shared_session = [&] {
    std::lock_guard lock(current_mutex);
    return current;
  };
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("seg") != nullptr; }));

  auto call = std::make_shared<SegmentCall>("seg", 100);
  REQUIRE(registry.segments.queue(call));
  registry.request_refill();
  REQUIRE(eventually([&] { return call->done(); }));
  const auto outcome = call->take_outcome();
  REQUIRE(outcome);
  const auto* grant = std::get_if<SegmentGrant>(&*outcome);
  REQUIRE(grant);
  CHECK(grant->first == 1);
  CHECK(grant->last == 100);
  // Named before it was answered.
  const auto holders = read_holders(*admin, kSupplierRoot);
  REQUIRE(holders);
  REQUIRE(holders.value().size() == 1);
  REQUIRE(holders.value()[0].record);
  CHECK(holders.value()[0].record->tags.at("seg").to == 101);

  // ZooKeeper back from the backup: the node as it was before the segment,
  // read on the next session the supplier takes up.
  REQUIRE(admin->set(path, backup.value().data, -1));
  {
    std::lock_guard lock(current_mutex);
    current = connect(zk);
  }
  registry.request_refill();
  REQUIRE(eventually([&] { return registry.find("seg")->frozen.load(); }));
  CHECK(history.open());
  REQUIRE(eventually([&] {
    const auto node = read_sequence(*admin, kSupplierRoot, "seg");
    return node && node.value().node.frozen && node.value().node.floor >= 100;
  }));
  supplier.stop();
}

namespace {

// A segment of `step` numbers of `tag`, as the route asks the supplier.
SegmentCall::Outcome ask_segment(SequenceRegistry& registry, const std::string& tag,
                                 std::int64_t step) {
  auto call = std::make_shared<SegmentCall>(tag, step);
  REQUIRE(registry.segments.queue(call));
  registry.request_refill();
  REQUIRE(eventually([&] { return call->done(); }));
  return *call->take_outcome();
}

}  // namespace

TEST_CASE(
    "sequence supplier: a segment asked over a connection in its restore grace is refused "
    "before anything is taken, then served from where the counter stood",
    "[sequence][cosid]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "seg", 1, 10));
  auto options = options_for(zk, "runA");
  options.restore_grace = 1500ms;
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("seg") != nullptr; }));
  const auto early = ask_segment(registry, "seg", 100);
  const auto* refused = std::get_if<SegmentRefusal>(&early);
  REQUIRE(refused);
  CHECK(refused->why == SegmentRefusal::Why::unavailable);
  CHECK(refused->message.find("restore grace") != std::string::npos);
  const auto node = read_sequence(*admin, kSupplierRoot, "seg");
  REQUIRE(node);
  CHECK(node.value().node.next == 1);  // nothing taken, nothing spent
  SegmentCall::Outcome later;
  REQUIRE(eventually(
      [&] {
        later = ask_segment(registry, "seg", 100);
        return std::holds_alternative<SegmentGrant>(later);
      },
      5s));
  CHECK(std::get<SegmentGrant>(later).first == 1);
  CHECK(std::get<SegmentGrant>(later).last == 100);
  supplier.stop();
}

TEST_CASE(
    "sequence supplier: a tag it held by a segment of a million, gone with ZooKeeper's data, is "
    "made again frozen above it with the tag's own step",
    "[sequence][cosid]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSupplierRoot, "seg", 1, 10));
  ClusterHistory history;
  auto options = options_for(zk, "runA");
  options.history = &history;
  SequenceRegistry registry(4);
  SequenceSupplier supplier(options, registry);
  supplier.start();
  REQUIRE(eventually([&] { return registry.find("seg") != nullptr; }));
  const auto granted = ask_segment(registry, "seg", 1'000'000);
  REQUIRE(std::holds_alternative<SegmentGrant>(granted));
  CHECK(std::get<SegmentGrant>(granted).last == 1'000'000);
  // As a wipe leaves it: the node and its floor child gone.
  const std::string node = sequence_path(kSupplierRoot, "seg");
  REQUIRE(admin->remove(node + "/floor", -1));
  REQUIRE(admin->remove(node, -1));
  // The supplier may see it first (its floor watch fires on the delete, and
  // it held the tag): either way a loss is open.
  (void)history.report(HistoryLoss::wiped, "a test's loss", 0);
  REQUIRE(history.open());
  REQUIRE(eventually([&] {
    const auto again = read_sequence(*admin, kSupplierRoot, "seg");
    return again && again.value().node.frozen && again.value().node.floor >= 1'000'000;
  }));
  const auto again = read_sequence(*admin, kSupplierRoot, "seg");
  CHECK(again.value().node.step == 10);
  supplier.stop();
}
