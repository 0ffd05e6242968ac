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
//    with clock_moved_backwards until it passes the last issued unit again.

#include <atomic>
#include <climits>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/clock.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/result.hpp"

namespace snowflake {

enum class GenerateErrc {
  clock_moved_backwards,  // wall clock behind the last issued unit by more than we wait
  clock_behind_floor,     // at creation: wall clock behind the floor by more than we wait
  clock_before_epoch,     // wall clock before the layout's epoch
  time_exhausted,         // wall clock past the layout's end of life
  time_not_reserved,      // the state file has not yet recorded this time as used (or closed)
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
};

class IdGenerator {
 public:
  struct Stats {
    std::uint64_t sequence_waits = 0;      // a unit's sequence was used up
    std::uint64_t backward_waits = 0;      // a small clock step back was waited out
    std::uint64_t backward_refusals = 0;   // calls refused with clock_moved_backwards
  };

  // Waits for the clock to pass the floor (up to max_floor_wait).
  // Preconditions (checked, std::invalid_argument): worker_id in the layout's
  // range; random_sequence_bound within 1 .. 2^sequence_bits.
  static Result<std::unique_ptr<IdGenerator>, GenerateError> create(
      const IdLayout& layout, std::uint32_t worker_id, const GeneratorOptions& options,
      Clock& clock = SystemClock::instance());

  IdGenerator(const IdGenerator&) = delete;
  IdGenerator& operator=(const IdGenerator&) = delete;

  Result<std::uint64_t, GenerateError> next();

  // Appends n strictly increasing IDs to `out`; IDs within one time unit are
  // consecutive numbers. A batch larger than a unit's capacity spans units.
  // On error `out` is left as it was (the IDs reserved so far are dropped,
  // never issued again).
  Result<void, GenerateError> next_n(std::size_t n, std::vector<std::uint64_t>& out);

  // IDs are issued only up to this instant (Unix ms; default: unbounded).
  // The coordinator moves it forward each time the local state file durably
  // records it, so a restart after kill -9 starts above every issued ID.
  void set_time_ceiling_ms(std::int64_t ceiling_ms) noexcept;
  // Issues nothing more, ever (before the worker ID is released). The high-
  // water mark stays readable.
  void close() noexcept;

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
    std::int64_t wait_until_ns = 0;  // sequence_used_up, clock_behind
    std::optional<GenerateError> error{};  // refused
  };

  IdGenerator(const IdLayout& layout, std::uint32_t worker_id, const GeneratorOptions& options,
              Clock& clock);

  Standing judge(std::uint64_t state, std::int64_t now_ns) const noexcept;
  Result<Reservation, GenerateError> reserve(std::uint32_t want);
  std::int64_t wall_ns() const noexcept {
    return real_clock_ ? SystemClock::read_wall_ns() : clock_.wall_ns();
  }
  std::uint32_t first_sequence() const noexcept;
  void wait_until_ns(std::int64_t target_ns);

  // The packed state: (unit + 1) << sequence_bits | sequence. The +1 lets
  // "nothing issued yet" be unit -1 with its sequence used up.
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
  const GeneratorOptions options_;
  Clock& clock_;
  const int seq_bits_;
  const std::uint32_t max_seq_;
  const bool unit_is_ms_;  // the common 1 ms unit skips a division
  const bool real_clock_;  // SystemClock: read it without a virtual call

  alignas(64) std::atomic<std::uint64_t> state_;
  // Last time unit that may be issued; read only when a new unit starts.
  std::atomic<std::int64_t> ceiling_unit_{INT64_MAX};
  alignas(64) std::atomic<std::uint64_t> sequence_waits_{0};
  std::atomic<std::uint64_t> backward_waits_{0};
  std::atomic<std::uint64_t> backward_refusals_{0};
};

}  // namespace snowflake
