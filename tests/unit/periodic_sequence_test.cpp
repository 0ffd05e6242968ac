// A periodic sequence's slots (sequences/periodic.hpp): found by the clock
// without a lock, the next period's installed ahead of its boundary, an
// older one leaving the lookup, and readers racing the installs.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "snowflake/sequences/periodic.hpp"

using namespace snowflake;

namespace {

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kNov26Noon = 1'795'694'400'000;  // 2026-11-26T12:00:00Z

PeriodicSequence invoices() {
  return PeriodicSequence(
      "invoice", *PeriodRule::make(PeriodReset::daily, "Europe/Berlin"),
      NumberTemplate::parse("INV-{yyyy}{MM}{dd}-{n:06}", PeriodReset::daily).value());
}

}  // namespace

TEST_CASE(
    "periodic sequence: a period's slot is found by the clock, the next one from its "
    "first instant",
    "[period]") {
  auto seq = invoices();
  CHECK(seq.slot_at(kNov26Noon) == nullptr);  // nothing taken up yet
  const Period today = seq.rule().period_at(kNov26Noon);
  PeriodSlot* slot = seq.install(today);
  REQUIRE(slot != nullptr);
  CHECK(seq.install(today) == slot);  // once
  CHECK(slot->entry.tag == "invoice@2026-11-26");
  CHECK(slot->printed.format(123) == "INV-20261126-000123");
  CHECK(seq.slot_at(kNov26Noon) == slot);
  CHECK(seq.slot_at(today.begins_ms) == slot);
  CHECK(seq.slot_at(today.next_begins_ms - 1) == slot);
  CHECK(seq.slot_at(today.next_begins_ms) == nullptr);  // tomorrow: not yet here
  CHECK(seq.slot_at(today.begins_ms - 1) == nullptr);

  // Tomorrow's, installed ahead of midnight: each instant finds its own.
  PeriodSlot* next = seq.install(seq.rule().next_after(today));
  REQUIRE(next != nullptr);
  CHECK(next->entry.tag == "invoice@2026-11-27");
  CHECK(seq.slot_at(today.next_begins_ms - 1) == slot);
  CHECK(seq.slot_at(today.next_begins_ms) == next);
  CHECK(seq.live() == std::vector<PeriodSlot*>{next, slot});

  // The day after: today leaves the lookup; a request still at today
  // finds nothing (it is over here), and today cannot come back.
  const Period third = seq.rule().next_after(next->period);
  PeriodSlot* after = seq.install(third);
  CHECK(seq.live() == std::vector<PeriodSlot*>{after, next});
  CHECK(seq.slot_at(kNov26Noon) == nullptr);
  CHECK(seq.install(today) == nullptr);
  CHECK(slot->entry.tag == "invoice@2026-11-26");  // still alive for who holds it
  // What the supplier asks before it makes a period's node, and what a
  // request whose clock stepped back that far is told (period_closed).
  CHECK_FALSE(seq.installable(today));
  CHECK_FALSE(seq.installable(third));  // held already
  CHECK(seq.installable(seq.rule().next_after(third)));
  CHECK(seq.before_held(today));
  CHECK_FALSE(seq.before_held(next->period));
  CHECK_FALSE(invoices().before_held(today));  // nothing held: not before it
}

TEST_CASE("periodic sequence: requests racing the installs find only their own period",
          "[period]") {
  auto seq = invoices();
  Period p = seq.rule().period_at(kNov26Noon);
  seq.install(p);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::atomic<long> found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      std::int64_t at = kNov26Noon + r * 7 * kHour;
      while (!done.load()) {
        at += 5 * kHour;  // across the days the main thread installs
        if (const PeriodSlot* s = seq.slot_at(at)) {
          found.fetch_add(1);
          if (seq.rule().period_at(at).key != s->period.key) wrong.fetch_add(1);
        }
        if (at > kNov26Noon + 40 * 24 * kHour) at = kNov26Noon;
      }
    });
  }
  for (int day = 0; day < 40; ++day) {
    p = seq.rule().next_after(p);
    REQUIRE(seq.install(p) != nullptr);
    std::this_thread::yield();
  }
  // The readers go on over the last two days a while: some find a slot.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (found.load() < 1000 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  done.store(true);
  for (auto& t : readers) t.join();
  CHECK(wrong.load() == 0);
  CHECK(found.load() > 0);
}
