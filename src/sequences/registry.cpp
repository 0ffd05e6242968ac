#include "snowflake/sequences/registry.hpp"

#include "snowflake/sequences/periodic.hpp"

#include <bit>
#include <functional>

namespace snowflake {

SequenceEntry::SequenceEntry(std::string t) : tag(std::move(t)) {}
SequenceEntry::~SequenceEntry() = default;

void SequenceEntry::set_periodic(std::unique_ptr<PeriodicSequence> p) {
  if (periodic_storage_) return;
  periodic_storage_ = std::move(p);
  periodic.store(periodic_storage_.get(), std::memory_order_release);
}

SequenceRegistry::SequenceRegistry(std::size_t capacity)
    : capacity_(capacity), table_(std::bit_ceil(std::max<std::size_t>(2, capacity * 2))) {}

std::size_t SequenceRegistry::slot_of(std::string_view tag) const noexcept {
  return std::hash<std::string_view>{}(tag) & (table_.size() - 1);
}

SequenceEntry* SequenceRegistry::find(std::string_view tag) const noexcept {
  // At most capacity_ of the table's slots are used, so an empty one ends the probe.
  for (std::size_t i = slot_of(tag);; i = (i + 1) & (table_.size() - 1)) {
    SequenceEntry* e = table_[i].load(std::memory_order_acquire);
    if (!e) return nullptr;
    if (e->tag == tag) return e;
  }
}

SequenceEntry* SequenceRegistry::add(const std::string& tag) {
  std::lock_guard lock(entries_mutex_);
  if (SequenceEntry* known = find(tag)) return known;
  if (owned_.size() >= capacity_) return nullptr;
  owned_.push_back(std::make_unique<SequenceEntry>(tag));
  SequenceEntry* e = owned_.back().get();
  for (std::size_t i = slot_of(tag);; i = (i + 1) & (table_.size() - 1)) {
    if (!table_[i].load(std::memory_order_relaxed)) {
      table_[i].store(e, std::memory_order_release);  // whole before it is seen
      return e;
    }
  }
}

std::vector<SequenceEntry*> SequenceRegistry::entries() const {
  std::lock_guard lock(entries_mutex_);
  std::vector<SequenceEntry*> out;
  out.reserve(owned_.size());
  for (const auto& e : owned_) out.push_back(e.get());
  return out;
}

void SequenceRegistry::request_refill() noexcept {
  if (refill_requested_.exchange(true, std::memory_order_acq_rel)) return;  // already asked
  std::lock_guard lock(wake_mutex_);
  wake_.notify_one();
}

void SequenceRegistry::wake_all_waiting() const {
  for (SequenceEntry* e : entries()) e->waiting.wake_all();
}

bool SequenceRegistry::wait_for_request(std::chrono::milliseconds timeout) {
  std::unique_lock lock(wake_mutex_);
  wake_.wait_for(lock, timeout,
                 [this] { return refill_requested_.load(std::memory_order_acquire); });
  return refill_requested_.exchange(false, std::memory_order_acq_rel);
}

}  // namespace snowflake
