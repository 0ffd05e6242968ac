#pragma once
// The outcome of a call another thread answers while the connection that
// asked waits on its event loop (http/answer.hpp's Wait): a worker-ID lease
// (runtime/lease_calls.hpp), a strict sequence's request passed on to its
// owner (http/strict_forwarder.hpp), a segment of a sequence
// (sequences/segment_calls.hpp). The answering thread finishes it once; the
// connection subscribes a wake, then takes the outcome.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "snowflake/sequences/replies.hpp"

namespace snowflake {

template <class Outcome>
class PendingOutcome {
 public:
  bool done() const {
    std::lock_guard lock(mutex_);
    return outcome_.has_value();
  }
  // The outcome, moved out (once); nullopt while under way.
  std::optional<Outcome> take_outcome() {
    std::lock_guard lock(mutex_);
    return std::exchange(outcome_, std::nullopt);
  }
  // `wake` is called once the outcome is in (and not again).
  void subscribe(std::weak_ptr<const std::function<void()>> wake) { wakes_.add(std::move(wake)); }
  void finish(Outcome outcome) {
    {
      std::lock_guard lock(mutex_);
      outcome_ = std::move(outcome);
    }
    wakes_.wake_all();
  }

 private:
  mutable std::mutex mutex_;
  std::optional<Outcome> outcome_;
  WakeList wakes_;
};

}  // namespace snowflake
