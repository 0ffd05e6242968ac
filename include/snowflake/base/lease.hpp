#pragma once
// "May this process issue IDs right now, and if not, why?" — one answer,
// read on every ID request, written by whoever earns the right to issue:
// static mode grants it once at start; the ZooKeeper heartbeat extends it to
// a deadline on the monotonic clock. Lock-free: two atomics.

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <string_view>

#include "snowflake/base/clock.hpp"

namespace snowflake {

enum class LeaseState : std::uint8_t {
  not_ready,   // never granted yet (starting up), or taken back on purpose
  valid,       // IDs may be issued
  expired,     // the deadline passed without an extension
  clock_skew,  // held: the wall clock disagrees with ZooKeeper's by more than allowed
  // Held: ZooKeeper lost some of the cluster's history, and the cluster is
  // not fenced yet (cluster/cluster_history.hpp).
  fenced,
};
inline constexpr LeaseState kLeaseStates[] = {LeaseState::not_ready, LeaseState::valid,
                                              LeaseState::expired, LeaseState::clock_skew,
                                              LeaseState::fenced};

// Stable names: "not_ready", "valid", "lease_expired", "clock_skew",
// "cluster_fenced".
std::string_view to_string(LeaseState state) noexcept;

class Lease {
 public:
  struct Status {
    LeaseState state;
    // Time left before the deadline; -1 ms when there is no deadline (an
    // indefinite grant, or no grant).
    std::chrono::milliseconds remaining;
  };

  explicit Lease(const Clock& clock = SystemClock::instance()) : clock_(clock) {}

  // Valid until revoked (static mode).
  void grant_indefinitely() noexcept;
  // Valid until `deadline` on the monotonic clock.
  void extend_until(BootClock::time_point deadline) noexcept;
  void revoke() noexcept;
  // While held for clock skew nothing may be issued, whatever the deadline.
  void hold_for_clock_skew(bool held) noexcept {
    skew_hold_.store(held, std::memory_order_release);
  }
  // While held for a loss of the cluster's history nothing may be issued,
  // whatever the deadline or a heartbeat that extends it meanwhile.
  void hold_for_history(bool held) noexcept {
    history_hold_.store(held, std::memory_order_release);
  }

  bool may_issue() const noexcept { return state() == LeaseState::valid; }
  // Which run of the lease this is: it moves each time the lease is granted
  // again after it ran out or was revoked (never while it is extended in
  // time). A strict sequence's owner hands out only within the run in which
  // it last read its ownership (sequence_store/strict_owner.hpp). Read after
  // may_issue(): a new deadline is published after its generation.
  std::uint64_t generation() const noexcept { return generation_.load(); }
  LeaseState state() const noexcept;
  Status status() const noexcept;

 private:
  static constexpr std::int64_t kNever = INT64_MAX;  // deadline of an indefinite grant
  static constexpr std::int64_t kNone = INT64_MIN;   // no grant

  std::int64_t now_ns() const noexcept;

  const Clock& clock_;
  std::atomic<std::int64_t> deadline_ns_{kNone};  // monotonic clock, ns since its epoch
  std::atomic<std::uint64_t> generation_{1};
  std::atomic<bool> skew_hold_{false};
  std::atomic<bool> history_hold_{false};
};

}  // namespace snowflake
