#include "snowflake/base/zookeeper_clock.hpp"

#include <algorithm>
#include <thread>

namespace snowflake {

namespace {

std::int64_t ms_of(BootClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

void ZooKeeperClock::saw(BootClock::time_point sent, BootClock::time_point received,
                         std::int64_t stamp_ms) noexcept {
  if (received < sent) return;
  const std::lock_guard lock(writers_);
  // The stamp was made after `sent` and before `received`: ZooKeeper's
  // clock minus ours was at least stamp - received and at most stamp - sent
  // (rounded outwards).
  const std::int64_t earliest = stamp_ms - ms_of(received) - 1;
  const std::int64_t latest = stamp_ms - ms_of(sent) + 1;
  sequence_.fetch_add(1, std::memory_order_relaxed);  // odd: readers retry
  // The stores below are seen only after the odd count (a reader that sees
  // one of them sees the count odd, or changed, when it reads it again).
  std::atomic_thread_fence(std::memory_order_release);
  earliest_offset_ms_.store(earliest, std::memory_order_relaxed);
  latest_offset_ms_.store(latest, std::memory_order_relaxed);
  seen_at_ms_.store(ms_of(received), std::memory_order_relaxed);
  sequence_.fetch_add(1, std::memory_order_release);
}

std::optional<ZooKeeperClock::Reading> ZooKeeperClock::read(
    BootClock::time_point at) const noexcept {
  std::int64_t earliest = 0;
  std::int64_t latest = 0;
  std::int64_t seen_at = 0;
  for (;;) {
    const std::uint64_t before = sequence_.load(std::memory_order_acquire);
    earliest = earliest_offset_ms_.load(std::memory_order_relaxed);
    latest = latest_offset_ms_.load(std::memory_order_relaxed);
    seen_at = seen_at_ms_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && sequence_.load(std::memory_order_relaxed) == before) break;
    std::this_thread::yield();  // a writer between its two counts (three stores)
  }
  if (seen_at < 0) return std::nullopt;
  const std::int64_t now = ms_of(at);
  const std::int64_t age = std::max<std::int64_t>(0, now - seen_at);
  const std::int64_t drift = age * kDriftPpm / 1'000'000 + 1;
  return Reading{now + earliest - drift, now + latest + drift, std::chrono::milliseconds(age)};
}

ZooKeeperClock::Judged ZooKeeperClock::judge(std::int64_t wall_ms, BootClock::time_point at,
                                             std::int64_t* off_ms) const noexcept {
  if (off_ms) *off_ms = 0;
  const auto r = read(at);
  if (!r) return alone_.load(std::memory_order_relaxed) ? Judged::within : Judged::unknown;
  const std::int64_t max_skew_ms = max_skew_ms_.load(std::memory_order_relaxed);
  std::int64_t off = 0;
  if (wall_ms < r->earliest_ms - max_skew_ms) off = wall_ms - r->earliest_ms;
  if (wall_ms > r->latest_ms + max_skew_ms) off = wall_ms - r->latest_ms;
  if (off_ms) *off_ms = off;
  return off == 0 ? Judged::within : Judged::off;
}

}  // namespace snowflake
