// A periodic sequence's slots (sequences/periodic.hpp): found by the clock
// without a lock, the next period's installed ahead of its boundary, an
// older one leaving the lookup, readers racing the installs, and the slots
// of periods over freed once no reader holds them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "snowflake/sequences/periodic.hpp"

using namespace snowflake;

namespace {

constexpr std::int64_t kAnHour = 3'600'000;
constexpr std::int64_t kNoonNov26 = 1'795'694'400'000;  // 2026-11-26T12:00:00Z

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
  const auto held = seq.hold();
  CHECK(seq.slot_at(kNoonNov26, held) == nullptr);  // nothing taken up yet
  const Period today = seq.rule().period_at(kNoonNov26);
  PeriodSlot* slot = seq.install(today);
  REQUIRE(slot != nullptr);
  CHECK(seq.install(today) == slot);  // once
  CHECK(slot->entry.tag == "invoice@2026-11-26");
  CHECK(slot->printed.format(123) == "INV-20261126-000123");
  CHECK(seq.slot_at(kNoonNov26, held) == slot);
  CHECK(seq.slot_at(today.begins_ms, held) == slot);
  CHECK(seq.slot_at(today.next_begins_ms - 1, held) == slot);
  CHECK(seq.slot_at(today.next_begins_ms, held) == nullptr);  // tomorrow: not yet here
  CHECK(seq.slot_at(today.begins_ms - 1, held) == nullptr);

  // Tomorrow's, installed ahead of midnight: each instant finds its own.
  PeriodSlot* next = seq.install(seq.rule().next_after(today));
  REQUIRE(next != nullptr);
  CHECK(next->entry.tag == "invoice@2026-11-27");
  CHECK(seq.slot_at(today.next_begins_ms - 1, held) == slot);
  CHECK(seq.slot_at(today.next_begins_ms, held) == next);
  CHECK(seq.live(held) == std::vector<PeriodSlot*>{next, slot});

  // The day after: today leaves the lookup; a request still at today
  // finds nothing (it is over here), and today cannot come back.
  const Period third = seq.rule().next_after(next->period);
  PeriodSlot* after = seq.install(third);
  CHECK(seq.live(held) == std::vector<PeriodSlot*>{after, next});
  CHECK(seq.slot_at(kNoonNov26, held) == nullptr);
  CHECK(seq.install(today) == nullptr);
  CHECK(slot->entry.tag == "invoice@2026-11-26");  // still alive for who holds it
  // What the supplier asks before it makes a period's node, and what a
  // request whose clock stepped back that far is told (period_closed).
  CHECK_FALSE(seq.installable(today));
  CHECK_FALSE(seq.installable(third));  // held already
  CHECK(seq.installable(seq.rule().next_after(third)));
  CHECK(seq.before_held(today, held));
  CHECK_FALSE(seq.before_held(next->period, held));
  const auto none = invoices();
  CHECK_FALSE(none.before_held(today, none.hold()));  // nothing held: not before it
}

TEST_CASE(
    "periodic sequence: requests racing the installs and the frees find only their own period, "
    "whole",
    "[period]") {
  auto seq = invoices();
  Period p = seq.rule().period_at(kNoonNov26);
  seq.install(p);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::atomic<long> found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      std::int64_t at = kNoonNov26 + r * 7 * kAnHour;
      while (!done.load()) {
        at += 5 * kAnHour;  // across the days the main thread installs
        const auto held = seq.hold();
        if (PeriodSlot* s = seq.slot_at(at, held)) {
          found.fetch_add(1);
          if (seq.rule().period_at(at).key != s->period.key) wrong.fetch_add(1);
          // Read and written through the slot while held.
          if (!s->entry.tag.ends_with(s->period.key)) wrong.fetch_add(1);
          s->entry.gauges.handed_out.fetch_add(1, std::memory_order_relaxed);
        }
        for (PeriodSlot* s : seq.live(held)) {
          if (s->entry.tag.empty()) wrong.fetch_add(1);
        }
        if (at > kNoonNov26 + 40 * 24 * kAnHour) at = kNoonNov26;
      }
    });
  }
  // The supplier frees what is over as it goes (nothing let go of is held
  // by it here): a reader that used a freed slot is what ASan and TSan see.
  const auto none = [](const PeriodSlot*) { return false; };
  for (int day = 0; day < 40; ++day) {
    p = seq.rule().next_after(p);
    REQUIRE(seq.install(p) != nullptr);
    seq.free_unused(none);
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
  // The readers gone: all but the two in the lookup freed (a reader
  // descheduled while holding may have kept some until now).
  seq.free_unused(none);
  seq.free_unused(none);
  CHECK(seq.free_unused(none) == 2);
}

namespace {

// The supplier's map of the periods it still supplies, by slot: the two
// newest here (an older one let go of once over).
struct Supplied {
  std::set<const PeriodSlot*> slots;
  std::function<bool(const PeriodSlot*)> in_use() {
    return [this](const PeriodSlot* s) { return slots.contains(s); };
  }
};

}  // namespace

TEST_CASE(
    "periodic sequence: across 1,000 days a daemon keeps the slots of about two periods (an over "
    "one freed once let go of and out of the lookup)",
    "[period]") {
  auto seq = invoices();
  Supplied supplied;
  Period p = seq.rule().period_at(kNoonNov26);
  std::size_t most = 0;
  for (int day = 0; day < 1000; ++day) {
    PeriodSlot* slot = seq.install(p);
    REQUIRE(slot != nullptr);
    supplied.slots.insert(slot);
    // Let go of what is two days old (the supplier's let_go_of_over_periods).
    const auto held = seq.hold();
    const auto live = seq.live(held);
    std::erase_if(supplied.slots, [&](const PeriodSlot* s) {
      return std::find(live.begin(), live.end(), s) == live.end();
    });
    most = std::max(most, seq.free_unused(supplied.in_use()));
    p = seq.rule().next_after(p);
  }
  // Two passes: the drain begun at the last one ends at the next.
  seq.free_unused(supplied.in_use());
  CHECK(seq.free_unused(supplied.in_use()) == 2);
  CHECK(most <= 3);
}

TEST_CASE(
    "periodic sequence: a slot a request still holds, or whose numbers a reply still carries, is "
    "not freed until it lets go",
    "[period]") {
  auto seq = invoices();
  Supplied none;
  const Period today = seq.rule().period_at(kNoonNov26);
  seq.install(today);
  // A request finds today's slot and keeps it (a wait for numbers).
  auto request = std::make_unique<PeriodicSequence::Hold>(seq.hold());
  PeriodSlot* found = seq.slot_at(kNoonNov26, *request);
  REQUIRE(found != nullptr);
  // The reply of another request took numbers of today and is being written.
  InFlightToken writing;
  {
    const auto held = seq.hold();
    PeriodSlot* other = seq.slot_at(kNoonNov26, held);
    REQUIRE(other == found);
    writing = other->entry.replies.enter();
  }
  // Two days on, today is out of the lookup and let go of.
  const Period tomorrow = seq.rule().next_after(today);
  seq.install(tomorrow);
  seq.install(seq.rule().next_after(tomorrow));
  for (int pass = 0; pass < 5; ++pass) CHECK(seq.free_unused(none.in_use()) == 3);
  CHECK(found->entry.tag == "invoice@2026-11-26");  // still whole for the request
  request.reset();
  for (int pass = 0; pass < 5; ++pass) CHECK(seq.free_unused(none.in_use()) == 3);
  writing.reset();  // written
  seq.free_unused(none.in_use());
  CHECK(seq.free_unused(none.in_use()) == 2);
}
