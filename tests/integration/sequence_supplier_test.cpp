// The sequences thread against a real ZooKeeper server
// (coord/sequence_supplier.hpp): tags created while it runs are served, the
// first range is taken when a request asks, two daemons' numbers never
// meet, buffered numbers are served with ZooKeeper stopped, and a clean
// stop gives the unused rest back.

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/coord/sequence_supplier.hpp"

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
    if (e->buffer.take(count - out.size(), out) == 0) {
      e->wanted.store(true);
      registry.request_refill();
      if (e->buffer.take_waiting(count - out.size(), out, 5000ms) == 0) break;
    }
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
