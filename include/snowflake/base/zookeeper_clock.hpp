#pragma once
// What ZooKeeper's clock reads now, as this daemon last saw it: the mtime
// or ctime the server stamped on one of our writes, plus the time since on
// BootClock. The wall clock may be stepped at any moment (NTP, an operator,
// a VM resumed); BootClock is not. So a request that decides something by
// the wall clock (the period a number is dated in) checks the wall clock
// against this first, at once, instead of at the coordinator's next
// heartbeat (3 minutes by default, never in static mode).
//
// Written by whoever writes to ZooKeeper (the coordinator's heartbeats, the
// sequence supplier's probes), read by any thread without a lock: a
// sequence lock (writers take a mutex among themselves; a reader retries
// the rare read a write overlapped).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "snowflake/base/clock.hpp"

namespace snowflake {

class ZooKeeperClock {
 public:
  // What ZooKeeper's clock read at `at`: between `earliest_ms` and
  // `latest_ms` (the server stamped it somewhere within our request's round
  // trip; and BootClock's rate is trusted to kDriftPpm since).
  struct Reading {
    std::int64_t earliest_ms = 0;
    std::int64_t latest_ms = 0;
    std::chrono::milliseconds age{0};  // since the stamp was seen
  };
  // How the wall clock stands against it.
  enum class Judged {
    unknown,  // no stamp seen yet
    within,   // within max_skew of ZooKeeper's clock
    off,      // further off than max_skew: nothing may be decided by it
  };
  // How far BootClock's rate may be from real time (NTP slews it by 500 ppm
  // at most; a free-running crystal is within 100): a stamp an hour old
  // widens the reading by 3.6 s.
  static constexpr std::int64_t kDriftPpm = 1000;

  // Any thread: a write sent at `sent`, answered at `received`, that the
  // server stamped `stamp_ms` on its own clock.
  void saw(BootClock::time_point sent, BootClock::time_point received,
           std::int64_t stamp_ms) noexcept;

  // Any thread: ZooKeeper's clock at `at`, or nullopt before the first stamp.
  std::optional<Reading> read(BootClock::time_point at = BootClock::now()) const noexcept;

  // Any thread: whether `wall_ms`, read at `at`, is within max_skew of
  // ZooKeeper's clock (coordinator.max_skew_ms, the bound the coordinator's
  // heartbeats hold the lease for). `off_ms`: by how much it is off (0 when
  // within or unknown).
  Judged judge(std::int64_t wall_ms, BootClock::time_point at = BootClock::now(),
               std::int64_t* off_ms = nullptr) const noexcept;

  // Before any thread reads: coordinator.max_skew_ms.
  void set_max_skew(std::chrono::milliseconds bound) noexcept {
    max_skew_ms_.store(bound.count(), std::memory_order_relaxed);
  }
  std::int64_t max_skew_ms() const noexcept { return max_skew_ms_.load(std::memory_order_relaxed); }

  // ZooKeeper refuses this daemon's clock probes (its ACL) and no
  // coordinator writes heartbeats (static mode): the wall clock alone
  // decides, as it did before there was this (warned of by the supplier).
  void trust_wall_clock_alone() noexcept { alone_.store(true, std::memory_order_relaxed); }

 private:
  std::mutex writers_;
  // Odd while a write is under way.
  std::atomic<std::uint64_t> sequence_{0};
  // ZooKeeper's clock minus BootClock's (ms), at the earliest and latest the
  // stamp can have been made; and when it was seen (BootClock ms).
  std::atomic<std::int64_t> earliest_offset_ms_{0};
  std::atomic<std::int64_t> latest_offset_ms_{0};
  std::atomic<std::int64_t> seen_at_ms_{-1};
  std::atomic<std::int64_t> max_skew_ms_{2000};
  std::atomic<bool> alone_{false};
};

}  // namespace snowflake
