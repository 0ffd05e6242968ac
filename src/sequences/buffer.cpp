#include "snowflake/sequences/buffer.hpp"

#include <algorithm>

namespace snowflake {

namespace {

// The most one step of take() reserves: a request that overshoots a used-up
// range adds at most this much past its end, so the offset's spare 2^31
// holds the overshoot of thousands of threads at once.
constexpr std::uint64_t kMaxReservation = std::uint64_t{1} << 20;

// The first number above `floor`: INT64_MAX at most, which no range holds
// (ranges end at INT64_MAX at most, exclusive), so a floor at the very top
// drops everything without overflowing.
constexpr std::int64_t above(std::int64_t floor) noexcept {
  return floor == INT64_MAX ? INT64_MAX : floor + 1;
}

}  // namespace

SequenceBuffer::SequenceBuffer() : word_(std::uint64_t{1} << kOffsetBits) {
  // Generation 1: an empty range, until the first add().
  slots_[1].generation.store(1, std::memory_order_release);
}

std::optional<SequenceRange> SequenceBuffer::range_of(std::uint64_t generation) const {
  const Slot& slot = slots_[generation % kSlots];
  if (slot.generation.load(std::memory_order_acquire) != generation) return std::nullopt;
  const std::int64_t start = slot.start.load(std::memory_order_relaxed);
  const std::int64_t size = slot.size.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.generation.load(std::memory_order_relaxed) != generation) return std::nullopt;
  return SequenceRange{start, start + size};
}

void SequenceBuffer::publish_locked(std::uint64_t generation, SequenceRange r) {
  Slot& slot = slots_[generation % kSlots];
  slot.generation.store(0, std::memory_order_relaxed);  // readers of the old one: retry
  std::atomic_thread_fence(std::memory_order_release);
  slot.start.store(r.start, std::memory_order_relaxed);
  slot.size.store(r.size(), std::memory_order_relaxed);
  slot.generation.store(generation, std::memory_order_release);
}

void SequenceBuffer::advance_locked(std::uint64_t generation) {
  while (!queue_.empty() && queue_.front().size() <= 0) queue_.pop_front();
  if (queue_.empty()) return;
  std::uint64_t w = word_.load(std::memory_order_acquire);
  if ((w >> kOffsetBits) != generation) return;
  publish_locked(generation + 1, queue_.front());
  // Requests still adding to the used-up generation change only its offset:
  // try again until the generation is ours to replace.
  while (!word_.compare_exchange_weak(w, (generation + 1) << kOffsetBits, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
    if ((w >> kOffsetBits) != generation) return;  // not reached: only we advance, locked
  }
  queue_.pop_front();
}

std::size_t SequenceBuffer::take(std::size_t count, std::vector<std::int64_t>& out) {
  std::size_t got = 0;
  while (got < count) {
    const std::uint64_t seen = word_.load(std::memory_order_acquire);
    const std::uint64_t generation = seen >> kOffsetBits;
    const auto range = range_of(generation);
    if (!range) continue;  // the word moved on while we read: read it again
    const auto size = static_cast<std::uint64_t>(range->size());
    if ((seen & kOffsetMask) >= size) {
      std::lock_guard lock(mutex_);
      if (closed_) break;
      if ((word_.load(std::memory_order_acquire) >> kOffsetBits) != generation) continue;
      if (queue_.empty()) break;  // dry
      advance_locked(generation);
      continue;
    }
    const std::uint64_t want =
        std::min<std::uint64_t>({count - got, size - (seen & kOffsetMask), kMaxReservation});
    // The one atomic step: these offsets of this generation are ours alone.
    const std::uint64_t w = word_.fetch_add(want, std::memory_order_acq_rel);
    const std::uint64_t offset = w & kOffsetMask;
    const auto reserved = range_of(w >> kOffsetBits);
    if (!reserved) continue;  // stalled over several ranges: those offsets are a gap
    const auto reserved_size = static_cast<std::uint64_t>(reserved->size());
    if (offset >= reserved_size) continue;
    const std::uint64_t n = std::min(want, reserved_size - offset);
    for (std::uint64_t i = 0; i < n; ++i) {
      out.push_back(reserved->start + static_cast<std::int64_t>(offset + i));
    }
    got += n;
  }
  return got;
}

bool SequenceBuffer::add(SequenceRange r) {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || r.size() <= 0 || r.start < last_end_) return false;
    last_end_ = r.end;
    r.start = std::max(r.start, above(floor_));
    // In pieces the offset can hold; the distance left is computed unsigned
    // (from < end), so a range at the top of int64 never steps past it.
    for (std::int64_t from = r.start; from < r.end;) {
      const auto left = static_cast<std::uint64_t>(r.end) - static_cast<std::uint64_t>(from);
      const std::int64_t to =
          left > static_cast<std::uint64_t>(kMaxSequenceRange) ? from + kMaxSequenceRange : r.end;
      queue_.push_back({from, to});
      from = to;
    }
    const std::uint64_t w = word_.load(std::memory_order_acquire);
    const auto current = range_of(w >> kOffsetBits);
    if (current && (w & kOffsetMask) >= static_cast<std::uint64_t>(current->size())) {
      advance_locked(w >> kOffsetBits);
    }
  }
  return true;
}

void SequenceBuffer::drop_through(std::int64_t floor) {
  std::lock_guard lock(mutex_);
  if (floor <= floor_) return;
  floor_ = floor;
  for (auto& r : queue_) r.start = std::min(r.end, std::max(r.start, above(floor)));
  // The range being handed out, if it reaches down to the floor: replaced by
  // its rest above the floor as a new generation, whatever the offset has
  // come to by then (the exchange fails and is redone if it moved).
  std::uint64_t w = word_.load(std::memory_order_acquire);
  for (;;) {
    const std::uint64_t generation = w >> kOffsetBits;
    const auto range = range_of(generation);
    if (!range) return;  // not reached: generations change only under the mutex
    const std::int64_t next = range->start + static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                 w & kOffsetMask, range->size()));
    if (next > floor || next >= range->end) break;
    publish_locked(generation + 1, {std::min(range->end, above(floor)), range->end});
    if (word_.compare_exchange_weak(w, (generation + 1) << kOffsetBits, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      break;
    }
  }
}

void SequenceBuffer::close() {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  // An empty generation: whatever a request read before, it reserves nothing
  // from here on. The rest of the old one goes back in front of the queue,
  // for state() to tell what was never handed out.
  std::uint64_t w = word_.load(std::memory_order_acquire);
  for (;;) {
    const std::uint64_t generation = w >> kOffsetBits;
    const auto range = range_of(generation);
    if (!range) return;
    publish_locked(generation + 1, {0, 0});
    if (word_.compare_exchange_weak(w, (generation + 1) << kOffsetBits, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      const std::int64_t next = range->start + static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                   w & kOffsetMask, range->size()));
      if (next < range->end) queue_.push_front({next, range->end});
      break;
    }
  }
}

SequenceBufferState SequenceBuffer::state() const {
  std::lock_guard lock(mutex_);
  SequenceBufferState s;
  const std::uint64_t w = word_.load(std::memory_order_acquire);
  if (const auto range = range_of(w >> kOffsetBits)) {
    const auto used = std::min<std::uint64_t>(w & kOffsetMask, range->size());
    s.current_size = range->size();
    s.current_left = range->size() - static_cast<std::int64_t>(used);
    if (s.current_left > 0) s.first_unused = range->start + static_cast<std::int64_t>(used);
  }
  for (const auto& r : queue_) {
    s.queued += r.size();
    if (r.size() > 0) ++s.ranges_queued;
    if (!s.first_unused && r.size() > 0) s.first_unused = r.start;
  }
  return s;
}

}  // namespace snowflake
