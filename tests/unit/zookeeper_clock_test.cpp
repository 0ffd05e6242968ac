#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "snowflake/base/zookeeper_clock.hpp"

using namespace snowflake;
using namespace std::chrono_literals;

namespace {

BootClock::time_point at_ms(std::int64_t ms) {
  return BootClock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace

TEST_CASE("ZooKeeper's clock as last seen: unknown before a stamp, then within or off by the bound",
          "[clock][period]") {
  ZooKeeperClock zk;
  zk.set_max_skew(2000ms);
  CHECK(zk.judge(1'000'000, at_ms(10)) == ZooKeeperClock::Judged::unknown);
  // A write sent at boot 1000 ms, answered at 1040 ms, stamped 5,000,000 on
  // ZooKeeper's clock: at boot 61,000 ZooKeeper's clock reads 5,059,960 to
  // 5,060,000 (and a millisecond each way, and the drift of a minute).
  zk.saw(at_ms(1000), at_ms(1040), 5'000'000);
  const auto r = zk.read(at_ms(61'000));
  REQUIRE(r);
  CHECK(r->earliest_ms <= 5'059'960);
  CHECK(r->earliest_ms >= 5'059'960 - 70);
  CHECK(r->latest_ms >= 5'060'000);
  CHECK(r->latest_ms <= 5'060'000 + 70);
  CHECK(r->age == 59'960ms);
  std::int64_t off = -1;
  CHECK(zk.judge(5'061'500, at_ms(61'000), &off) == ZooKeeperClock::Judged::within);
  CHECK(off == 0);
  CHECK(zk.judge(5'058'500, at_ms(61'000)) == ZooKeeperClock::Judged::within);
  // A day ahead, or five seconds behind: off, and by how much.
  CHECK(zk.judge(5'060'000 + 86'400'000, at_ms(61'000), &off) == ZooKeeperClock::Judged::off);
  CHECK(off > 86'399'000);
  CHECK(zk.judge(5'055'000, at_ms(61'000), &off) == ZooKeeperClock::Judged::off);
  CHECK(off < -4'800);
  // A newer stamp replaces it (ZooKeeper's clock may itself be stepped).
  zk.saw(at_ms(70'000), at_ms(70'010), 9'000'000);
  CHECK(zk.judge(9'000'005, at_ms(70'010)) == ZooKeeperClock::Judged::within);
  CHECK(zk.judge(5'069'000, at_ms(70'010)) == ZooKeeperClock::Judged::off);
}

TEST_CASE("ZooKeeper's clock as last seen widens with its age (BootClock's drift)",
          "[clock][period]") {
  ZooKeeperClock zk;
  zk.set_max_skew(1000ms);
  zk.saw(at_ms(0), at_ms(0), 1'000'000);
  const std::int64_t hour = 3'600'000;
  const auto r = zk.read(at_ms(hour));
  REQUIRE(r);
  // kDriftPpm of an hour each way: 3.6 s.
  CHECK(r->latest_ms - r->earliest_ms >= 2 * hour * ZooKeeperClock::kDriftPpm / 1'000'000);
  CHECK(zk.judge(1'000'000 + hour + 4'000, at_ms(hour)) == ZooKeeperClock::Judged::within);
  CHECK(zk.judge(1'000'000 + hour + 5'000, at_ms(hour)) == ZooKeeperClock::Judged::off);
}

TEST_CASE("ZooKeeper's clock refused (its ACL) in static mode: the wall clock alone decides",
          "[clock][period]") {
  ZooKeeperClock zk;
  CHECK(zk.judge(42, at_ms(1)) == ZooKeeperClock::Judged::unknown);
  zk.trust_wall_clock_alone();
  CHECK(zk.judge(42, at_ms(1)) == ZooKeeperClock::Judged::within);
  // A stamp seen later still decides.
  zk.saw(at_ms(0), at_ms(0), 1'000'000);
  CHECK(zk.judge(42, at_ms(1)) == ZooKeeperClock::Judged::off);
}

TEST_CASE("ZooKeeper's clock read while two writers tell it: never a mix of two stamps",
          "[clock][period]") {
  ZooKeeperClock zk;
  std::atomic<bool> done{false};
  // Each writer's stamps keep ZooKeeper's clock minus BootClock's at its
  // own constant: a reader that mixed two would find a window that is not
  // one of the two.
  auto writer = [&](std::int64_t offset) {
    for (std::int64_t i = 1; i <= 20'000; ++i) zk.saw(at_ms(i), at_ms(i + 5), i + offset);
  };
  std::vector<std::int64_t> bad;
  std::thread a(writer, 1'000'000), b(writer, 2'000'000);
  std::thread reader([&] {
    while (!done.load()) {
      const auto r = zk.read(at_ms(30'000));
      if (!r) continue;
      const std::int64_t width = r->latest_ms - r->earliest_ms;
      const std::int64_t mid = (r->latest_ms + r->earliest_ms) / 2;
      const bool one =
          std::abs(mid - (1'000'000 + 30'000)) < 100 || std::abs(mid - (2'000'000 + 30'000)) < 100;
      if (!one || width > 200) bad.push_back(mid);
    }
  });
  a.join();
  b.join();
  done.store(true);
  reader.join();
  CHECK(bad.empty());
}
