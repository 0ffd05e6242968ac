#include "snowflake/sequences/replies.hpp"

#include <algorithm>

namespace snowflake {

InFlightToken RepliesInFlight::enter() noexcept {
  for (;;) {
    const std::uint64_t epoch = epoch_.load(std::memory_order_seq_cst);
    auto& slot = in_flight_[epoch & 1];
    slot.fetch_add(1, std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_seq_cst) == epoch) return InFlightToken(&slot);
    slot.fetch_sub(1, std::memory_order_relaxed);  // a drain began meanwhile: the new epoch
  }
}

void RepliesInFlight::begin_drain() noexcept { epoch_.fetch_add(1, std::memory_order_seq_cst); }

bool RepliesInFlight::drained() const noexcept {
  const std::uint64_t before = epoch_.load(std::memory_order_relaxed) - 1;
  return in_flight_[before & 1].load(std::memory_order_seq_cst) == 0;
}

bool RepliesInFlight::idle() const noexcept {
  return in_flight_[0].load(std::memory_order_seq_cst) == 0 &&
         in_flight_[1].load(std::memory_order_seq_cst) == 0;
}

void WakeList::add(std::weak_ptr<const Wake> wake) {
  std::lock_guard lock(mutex_);
  if (waiting_.size() >= pruned_at_) {
    std::erase_if(waiting_, [](const std::weak_ptr<const Wake>& w) { return w.expired(); });
    pruned_at_ = std::max<std::size_t>(16, waiting_.size() * 2);
  }
  waiting_.push_back(std::move(wake));
}

void WakeList::wake_all() {
  std::vector<std::weak_ptr<const Wake>> woken;
  {
    std::lock_guard lock(mutex_);
    woken.swap(waiting_);
    pruned_at_ = 16;
  }
  for (const auto& w : woken) {
    if (const auto wake = w.lock()) (*wake)();
  }
}

}  // namespace snowflake
