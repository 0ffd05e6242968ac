#pragma once
// A segment of a sequence for a generator in another process (CosId's
// segment distributor: PATCH /segments/<namespace>/<name>?step=N), between
// the route that reads the request (http/cosid_segments.cpp) and the
// sequence supplier's thread (sequence_store/sequence_supplier.hpp), which
// takes exactly `step` numbers from ZooKeeper for it: the range is named in
// this run's holder node before it is answered, as a range of the buffer is
// (a loss of ZooKeeper's data then freezes the tag above it), and never
// given back (the numbers are the other process's from the answer on).

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "snowflake/base/clock.hpp"
#include "snowflake/sequences/pending_outcome.hpp"

namespace snowflake {

// The largest step asked at once: a typo of a few digits does not spend a
// sequence's numbers by the billion.
inline constexpr std::int64_t kMaxSegmentStep = 1'000'000'000;
// How long a connection waits for a segment; a call still queued after it
// is refused unserved (nothing taken for it).
inline constexpr auto kSegmentAnswerWait = std::chrono::seconds(5);
// Calls queued for the supplier at most; past them, refused at once.
inline constexpr std::size_t kMaxQueuedSegments = 256;

// [first, last]: exactly the step asked, numbers nobody else is handed.
struct SegmentGrant {
  std::int64_t first = 0;
  std::int64_t last = 0;
};

struct SegmentRefusal {
  enum class Why : std::uint8_t {
    no_sequence,  // no such sequence (seq create makes it)
    frozen,       // seq raise thaws it
    exhausted,    // fewer than `step` numbers left
    not_plain,    // strict or periodic: served by its routes only
    unavailable,  // not now (ZooKeeper, the restore grace): ask again
  };
  Why why = Why::unavailable;
  std::string message;
};

class SegmentCall : public PendingOutcome<std::variant<SegmentGrant, SegmentRefusal>> {
 public:
  using Outcome = std::variant<SegmentGrant, SegmentRefusal>;
  SegmentCall(std::string tag, std::int64_t step)
      : tag_(std::move(tag)), step_(step), asked_at_(BootClock::now()) {}
  const std::string& tag() const noexcept { return tag_; }
  std::int64_t step() const noexcept { return step_; }
  BootClock::time_point answer_by() const noexcept { return asked_at_ + kSegmentAnswerWait; }
  // The asker has stopped waiting: nothing is taken for it any more.
  bool abandoned() const noexcept { return BootClock::now() >= answer_by(); }

 private:
  const std::string tag_;
  const std::int64_t step_;
  const BootClock::time_point asked_at_;
};

// The calls waiting for the supplier, oldest first.
class SegmentDesk {
 public:
  // False: kMaxQueuedSegments wait already.
  bool queue(std::shared_ptr<SegmentCall> call) {
    std::lock_guard lock(mutex_);
    if (queued_.size() >= kMaxQueuedSegments) return false;
    queued_.push_back(std::move(call));
    return true;
  }
  std::deque<std::shared_ptr<SegmentCall>> take_all() {
    std::lock_guard lock(mutex_);
    return std::exchange(queued_, {});
  }

 private:
  std::mutex mutex_;
  std::deque<std::shared_ptr<SegmentCall>> queued_;
};

}  // namespace snowflake
