#pragma once
// How much of a sequence a daemon takes at once, and when: sized by the rate
// it hands numbers out at, so a range lasts about `segment_duration` (Leaf's
// rule: 15 minutes), between the tag's own step and a cap. Pure: the supplier
// (sequence_store/sequence_supplier.hpp) feeds it what it measured.
//
// A range rises to the rate's size at once (a burst must not run the buffer
// dry), and falls by half at most per take (a lull must not leave the next
// burst with crumbs). The next range is fetched once `refill_at` of the one
// being handed out is used, so at a steady rate the buffer never holds less
// than (1 - refill_at) of a range, and (1 - refill_at) + 1 ranges once the
// next one is in: with the defaults, 13.5 to 28.5 minutes of numbers, which
// is what a daemon serves through a ZooKeeper outage.

#include <chrono>
#include <cstdint>

#include "snowflake/base/clock.hpp"

namespace snowflake {

struct SequenceSizing {
  std::chrono::seconds segment_duration{900};  // how long a range should last
  std::int64_t max_step = 1'000'000'000;       // the largest range taken at once
  double refill_at = 0.1;                      // share of a range used before the next is fetched
};

// The size of the next range: rate x segment_duration, no less than the
// tag's step nor half the last range, no more than max_step (and never below 1).
std::int64_t next_range_size(double numbers_per_second, std::int64_t last_size,
                             std::int64_t tag_step, const SequenceSizing& sizing);

// Whether to fetch the next range now: nothing queued behind the range
// being handed out, and `refill_at` of it used (or none left at all).
bool should_refill(std::int64_t current_size, std::int64_t current_left, std::int64_t queued,
                   const SequenceSizing& sizing);

// The rate numbers are handed out at, smoothed (an exponential moving
// average over about `tau`), from a running total sampled now and then.
class RateMeter {
 public:
  using Clock = BootClock;
  explicit RateMeter(std::chrono::seconds tau = std::chrono::seconds(10)) : tau_(tau) {}

  // The running total of numbers handed out, as of `now`.
  void sample(std::int64_t total, Clock::time_point now);
  double per_second() const { return rate_; }

 private:
  std::chrono::seconds tau_;
  bool started_ = false;
  std::int64_t total_ = 0;
  Clock::time_point at_{};
  double rate_ = 0;
};

// How long `left` numbers last at `numbers_per_second`; nullopt-like -1 when
// nothing is being handed out (they last for ever).
double seconds_left(std::int64_t left, double numbers_per_second);

}  // namespace snowflake
