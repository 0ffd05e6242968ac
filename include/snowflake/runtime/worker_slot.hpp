#pragma once
// The generator this daemon issues with right now, if any: the coordinator
// installs one when it owns a worker ID and clears the slot when it loses
// it; request threads read it with one atomic load. Every generator
// installed lives as long as the slot, so a request that loaded the pointer
// just before a switch still holds a live object (the lease check, not the
// pointer, is what fences a daemon that lost its worker ID).

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "snowflake/ids/generator.hpp"

namespace snowflake {

class WorkerSlot {
 public:
  IdGenerator* current() const noexcept { return current_.load(std::memory_order_acquire); }

  IdGenerator& install(std::unique_ptr<IdGenerator> generator) {
    std::lock_guard lock(mutex_);
    owned_.push_back(std::move(generator));
    current_.store(owned_.back().get(), std::memory_order_release);
    return *owned_.back();
  }

  void clear() noexcept { current_.store(nullptr, std::memory_order_release); }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<IdGenerator>> owned_;  // worker-ID changes are rare
  std::atomic<IdGenerator*> current_{nullptr};
};

}  // namespace snowflake
