#include "snowflake/runtime/lease_calls.hpp"

#include <utility>

namespace snowflake {

std::optional<LeaseCall::Outcome> LeaseCall::take_outcome() {
  std::lock_guard lock(mutex_);
  return std::exchange(outcome_, std::nullopt);
}

void LeaseCall::subscribe(std::weak_ptr<const std::function<void()>> wake) {
  wakes_.add(std::move(wake));
}

void LeaseCall::finish(Outcome outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = std::move(outcome);
  }
  wakes_.wake_all();
}

}  // namespace snowflake
