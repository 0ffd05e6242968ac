#pragma once
// Issues strictly increasing, never-repeating IDs for one worker ID.
//
// Thread-safe and lock-free: the newest (time unit, sequence) pair lives in
// one atomic word, and every ID is claimed with one compare-and-swap after
// one wall-clock read. Waiting (sequence used up, small clock step back) is
// done outside that word, so no thread ever holds a lock while it sleeps.
//
// Guarantees, for one generator across all its threads:
//  - IDs are unique and strictly increasing in the order the CAS succeeds;
//  - no ID carries a time unit ahead of the wall clock (time is never
//    borrowed): a used-up unit means waiting for the next one;
//  - no ID carries a timestamp <= the floor given at creation;
//  - if the wall clock steps back by more than max_backward_wait, calls fail
//    with clock_moved_backwards until it passes the last issued unit again;
//  - no ID carries a time unit past either ceiling (the local state file's
//    reservation, the lease's time fence), and nothing at all once closed:
//    close() is final, whatever is set afterwards;
//  - a wait re-reads the clock every few milliseconds, so a clock step during
//    a wait is judged at once instead of being slept through.

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/result.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake {

enum class GenerateErrc {
  clock_moved_backwards,  // wall clock behind the last issued unit by more than we wait
  clock_behind_floor,     // at creation: wall clock behind the floor by more than we wait
  clock_before_epoch,     // wall clock before the layout's epoch
  time_exhausted,         // wall clock past the layout's end of life
  time_not_reserved,      // the state file has not yet recorded this time as used (or closed)
  lease_expired,          // past the time fence: the last confirmed heartbeat's time + lease
  floor_ahead,            // the cluster's migration floor is ahead of the wall clock
};

// Stable, machine-readable names ("clock_moved_backwards", ...).
std::string_view to_string(GenerateErrc code) noexcept;

struct GenerateError {
  GenerateErrc code;
  std::chrono::milliseconds gap{0};  // how far the clock is off, where that applies

  std::string message() const;
};

enum class SequenceStart {
  zero,    // each unit starts at sequence 0: full capacity
  random,  // each unit starts at a random sequence below random_sequence_bound
};

struct GeneratorOptions {
  // A wall-clock step back up to this long is waited out; more is an error.
  std::chrono::milliseconds max_backward_wait{5};
  // `random` spreads low-traffic IDs evenly over `id % shards` (Leaf's
  // trick), at the cost of up to random_sequence_bound - 1 fewer IDs per
  // unit (half that on average). Bound: 1 .. 2^sequence_bits.
  SequenceStart sequence_start = SequenceStart::zero;
  std::uint32_t random_sequence_bound = 1;
  // Never issue an ID whose timestamp is <= floor_ms (Unix ms): the last
  // instant an earlier owner of this worker ID may have used.
  std::optional<std::int64_t> floor_ms{};
  // At creation, a wall clock behind the floor is waited out up to this long.
  std::chrono::milliseconds max_floor_wait{1000};
  // Further behind than that: creation fails (false), or the generator is
  // made anyway and refuses with clock_moved_backwards until the clock has
  // passed the floor (true; static mode, which has no other worker ID to take).
  bool start_behind_floor = false;
  // The datacenter field of every ID (coordinator.datacenter_id); within the
  // layout's datacenter range (0 when it has none).
  std::uint32_t datacenter_id = 0;
};

class IdGenerator {
 public:
  struct Stats {
    std::uint64_t sequence_waits = 0;     // a unit's sequence was used up
    std::uint64_t backward_waits = 0;     // a small clock step back was waited out
    std::uint64_t backward_refusals = 0;  // calls refused with clock_moved_backwards
  };

  // Waits for the clock to pass the floor (up to max_floor_wait; the wait is
  // bounded on the monotonic clock too, so a step back during it fails it).
  // Preconditions (checked, std::invalid_argument): worker_id and
  // datacenter_id in the layout's ranges; random_sequence_bound within
  // 1 .. 2^sequence_bits.
  static Result<std::unique_ptr<IdGenerator>, GenerateError> create(
      const IdLayout& layout, std::uint32_t worker_id, const GeneratorOptions& options,
      Clock& clock = SystemClock::instance());

  IdGenerator(const IdGenerator&) = delete;
  IdGenerator& operator=(const IdGenerator&) = delete;

  Result<std::uint64_t, GenerateError> next();

  // Appends n strictly increasing IDs to `out`; IDs within one time unit are
  // sequence_step() apart (consecutive numbers in Twitter's order). A batch larger than a unit's
  // capacity spans units. On error `out` is left as it was (the IDs reserved so far are dropped,
  // never issued again).
  Result<void, GenerateError> next_n(std::size_t n, std::vector<std::uint64_t>& out);

  // IDs are issued only up to the lower of two instants (Unix ms; both
  // unbounded at first):
  //  - the reservation: moved forward each time the local state file durably
  //    records it, so a restart after kill -9 starts above every issued ID;
  //  - the time fence: the wall time written by the last heartbeat ZooKeeper
  //    confirmed, plus the lease. Whoever takes the worker ID without proof
  //    that we are dead starts above exactly that instant, so the two ranges
  //    are disjoint whatever the wall clock does meanwhile.
  void set_reservation_ms(std::int64_t until_ms);
  void set_fence_ms(std::int64_t until_ms);
  // The time fence last set (Unix ms), or INT64_MAX before any (static mode
  // has none): what this generator could ever stamp, whatever the clock says.
  std::int64_t fence_ms() const noexcept { return fence_ms_.load(std::memory_order_relaxed); }

  // The cluster's migration floor (snowflaked pool floor, coordinator.min_id):
  // from the return on, no ID whose time unit is at or below floor_ms's is
  // issued; while the wall clock is behind that, requests get floor_ahead.
  // Only ever raises; a closed generator stays closed.
  void raise_migration_floor(std::int64_t floor_ms) noexcept;
  // The highest cluster floor raised so far (Unix ms); INT64_MIN if none.
  std::int64_t migration_floor_ms() const noexcept {
    return migration_floor_ms_.load(std::memory_order_relaxed);
  }
  // Issues nothing more, ever (before the worker ID is released): a call that
  // read the state before close() cannot complete its claim after it, and no
  // later ceiling reopens it. The high-water mark stays readable.
  void close() noexcept;
  bool closed() const noexcept;

  // What next() would answer right now, without issuing anything: the error
  // it would return, or nullopt if it would issue (perhaps after a short wait).
  std::optional<GenerateError> check() const noexcept;

  // The high-water mark: Unix ms at which the newest issued time unit starts
  // (before any ID, the floor's unit). A later owner of this worker ID that
  // takes this as its floor can never repeat one of our IDs.
  std::int64_t high_water_mark_ms() const noexcept;

  const IdLayout& layout() const noexcept { return layout_; }
  std::uint32_t worker_id() const noexcept { return worker_id_; }
  Stats stats() const noexcept;

 private:
  // A run of `count` sequences starting at `first` in time unit `unit`.
  struct Reservation {
    std::int64_t unit;
    std::uint32_t first;
    std::uint32_t count;
  };

  // How the wall clock stands against the newest issued unit.
  struct Standing {
    enum Kind { new_unit, same_unit, sequence_used_up, clock_behind, refused } kind;
    std::int64_t now_unit = 0;
    std::int64_t wait_until_ns = 0;        // sequence_used_up, clock_behind
    std::optional<GenerateError> error{};  // refused
  };

  IdGenerator(const IdLayout& layout, std::uint32_t worker_id, const GeneratorOptions& options,
              Clock& clock);

  Standing judge(std::uint64_t state, std::int64_t now_ns) const noexcept;
  GenerateError ceiling_error(std::int64_t now_unit) const noexcept;
  Result<Reservation, GenerateError> reserve(std::uint32_t want);
  std::int64_t wall_ns() const noexcept {
    return real_clock_ ? SystemClock::read_wall_ns() : clock_.wall_ns();
  }
  std::uint32_t first_sequence() const noexcept;
  // One step of a wait for `target_ns`: a short sleep (at most one slice) or
  // a yield near the end. The caller re-judges the clock after every step.
  void wait_step(std::int64_t target_ns, int& spins);
  void store_ceiling();

  // The packed state: (unit + 1) << sequence_bits | sequence. The +1 lets
  // "nothing issued yet" be unit -1 with its sequence used up. Bit 63 marks
  // the generator closed: unit and sequence never reach it (they fill at
  // most 62 bits), and with it set unit_of() is far above any real unit, so a
  // closed state falls to judge()'s cold path and no claim can succeed on it.
  static constexpr std::uint64_t kClosedBit = std::uint64_t{1} << 63;
  std::uint64_t pack(std::int64_t unit, std::uint32_t seq) const noexcept {
    return (static_cast<std::uint64_t>(unit + 1) << seq_bits_) | seq;
  }
  std::int64_t unit_of(std::uint64_t state) const noexcept {
    return static_cast<std::int64_t>(state >> seq_bits_) - 1;
  }
  std::uint32_t seq_of(std::uint64_t state) const noexcept {
    return static_cast<std::uint32_t>(state & max_seq_);
  }

  const IdLayout layout_;
  const std::uint32_t worker_id_;
  const std::uint64_t machine_bits_;  // datacenter and worker, in place
  const GeneratorOptions options_;
  Clock& clock_;
  const int seq_bits_;
  const std::uint32_t max_seq_;
  const bool unit_is_ms_;  // the common 1 ms unit skips a division
  const bool real_clock_;  // SystemClock: read it without a virtual call

  alignas(64) std::atomic<std::uint64_t> state_;
  // Last time unit that may be issued: the lower of the two below. Read only
  // when a new unit starts; the two parts only to say which one refused.
  std::atomic<std::int64_t> ceiling_unit_{INT64_MAX};
  std::atomic<std::int64_t> reserved_unit_{INT64_MAX};
  std::atomic<std::int64_t> fence_unit_{INT64_MAX};
  std::atomic<std::int64_t> fence_ms_{INT64_MAX};
  // The cluster floor's unit: a newest unit at or below it was set by the
  // floor, not issued (so a clock behind it is floor_ahead, not a step back).
  std::atomic<std::int64_t> migration_floor_unit_{INT64_MIN};
  std::atomic<std::int64_t> migration_floor_ms_{INT64_MIN};
  std::mutex ceiling_mutex_;  // the two writers (state file, heartbeat) of the pair
  alignas(64) std::atomic<std::uint64_t> sequence_waits_{0};
  std::atomic<std::uint64_t> backward_waits_{0};
  std::atomic<std::uint64_t> backward_refusals_{0};
};

}  // namespace snowflake
