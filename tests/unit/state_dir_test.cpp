// The state directory: one process at a time, and what its state file can
// prove about the run that wrote it.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/child_process.hpp"
#include "../support/manual_clock.hpp"
#include "snowflake/state/state_dir.hpp"
#include "snowflake/state/time_reservation.hpp"

using namespace snowflake;
using namespace snowflake::state;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kStateNow = kDefaultEpochMs + 1'000'000'000;

StateRecord record(std::uint32_t worker_id = 7) {
  return StateRecord{CoordinatorType::recycle,
                     "/snowflake/x",
                     worker_id,
                     "/snowflake/x/pool/inuse/7",
                     OwnerToken{"host", 8080, 1234, "abcd"},
                     LayoutSettings{},
                     kStateNow,
                     kStateNow + 1000};
}

nlohmann::json read_json(const std::filesystem::path& path) {
  return nlohmann::json::parse(std::ifstream(path));
}

}  // namespace

TEST_CASE("state dir: made if missing (0700), locked by one holder, whose pid a second one names",
          "[state][safety]") {
  test::TempDir parent;
  const std::string dir = (parent.path() / "a" / "b").string();
  auto first = StateDir::open(dir);
  REQUIRE(first);
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  const auto second = StateDir::open(dir);
  REQUIRE(second.has_error());
  CHECK_THAT(second.error(), Catch::Contains(dir) &&
                                 Catch::Contains("pid " + std::to_string(::getpid())) &&
                                 Catch::Contains("in use by another snowflaked"));
  first.value().reset();  // the lock goes with its holder
  CHECK(StateDir::open(dir));
}

TEST_CASE("state dir: a record proves its writer dead only in this boot, in this very directory",
          "[state][safety]") {
  test::TempDir parent;
  const auto dir = parent.path() / "state";
  {
    auto d = StateDir::open(dir.string()).value();
    REQUIRE(d->save(record()));
  }
  SECTION("reopened after its writer ended: proved") {
    auto d = StateDir::open(dir.string()).value();
    REQUIRE(d->previous());
    CHECK(d->previous()->boot_id == current_boot_id());
    CHECK(d->proves_writer_dead(*d->previous()));
  }
  SECTION("a copy of the directory proves nothing") {
    const auto copy = parent.path() / "copy";
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    auto d = StateDir::open(copy.string()).value();
    REQUIRE(d->previous());
    CHECK(d->previous()->worker_id == 7);
    CHECK_FALSE(d->proves_writer_dead(*d->previous()));
  }
  SECTION("a record of another boot (a restored snapshot, a cloned machine) proves nothing") {
    auto j = read_json(dir / "worker.json");
    j["boot_id"] = "00000000-0000-0000-0000-000000000000";
    std::ofstream(dir / "worker.json") << j.dump();
    auto d = StateDir::open(dir.string()).value();
    CHECK_FALSE(d->proves_writer_dead(*d->previous()));
  }
  SECTION("a file written by 0.1.0 (no boot ID) is read, and proves nothing") {
    auto j = read_json(dir / "worker.json");
    j.erase("boot_id");
    j.erase("dir_id");
    std::ofstream(dir / "worker.json") << j.dump();
    auto d = StateDir::open(dir.string()).value();
    REQUIRE(d->previous());
    CHECK(d->previous()->reserved_until == kStateNow + 1000);
    CHECK_FALSE(d->proves_writer_dead(*d->previous()));
  }
}

TEST_CASE("time reservation: written ahead before anything is issued, exact once closed",
          "[state]") {
  test::TempDir parent;
  auto dir = StateDir::open((parent.path() / "s").string()).value();
  test::ManualClock clock(kStateNow);
  const IdLayout layout = IdLayout::create({}, kStateNow).value();
  auto g = IdGenerator::create(layout, 7, {}, clock).value();
  TimeReservation reservation(*dir, 100ms, clock);
  reservation.attach(*g, record());
  auto on_disk = read_json(parent.path() / "s" / "worker.json");
  CHECK(on_disk["reserved_until"] == kStateNow + kReserveIntervals * 100);
  CHECK(reservation.reserved_until(7) == kStateNow + kReserveIntervals * 100);
  CHECK(reservation.reserved_until(8) == 0);
  // The generator may issue up to the reservation, not beyond.
  REQUIRE(g->next());
  clock.advance(std::chrono::milliseconds(kReserveIntervals * 100 + 1));
  CHECK(g->next().error().code == GenerateErrc::time_not_reserved);

  g->close();
  reservation.detach(true);
  on_disk = read_json(parent.path() / "s" / "worker.json");
  CHECK(on_disk["reserved_until"] == g->high_water_mark_ms());
  CHECK(on_disk["owner"]["instance"] == "abcd");
  reservation.forget_owner();
  CHECK(read_json(parent.path() / "s" / "worker.json")["owner"].is_null());
}

TEST_CASE("time reservation: never recorded below the floor, even with the clock behind it",
          "[state][safety]") {
  test::TempDir parent;
  auto dir = StateDir::open((parent.path() / "s").string()).value();
  // Restarted with the clock 3 s behind the last run's reservation: the
  // generator refuses until the clock passes it, and a crash meanwhile must
  // leave that floor to the next run, not "now + 1 s".
  test::ManualClock clock(kStateNow);
  const IdLayout layout = IdLayout::create({}, kStateNow).value();
  auto g = IdGenerator::create(layout, 7,
                               {.floor_ms = kStateNow + 3000, .start_behind_floor = true}, clock)
               .value();
  TimeReservation reservation(*dir, 100ms, clock);
  reservation.attach(*g, record());
  CHECK(read_json(parent.path() / "s" / "worker.json")["reserved_until"] >= kStateNow + 3000);
  CHECK(g->next().error().code == GenerateErrc::clock_moved_backwards);
}
