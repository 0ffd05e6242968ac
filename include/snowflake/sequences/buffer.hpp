#pragma once
// Hands out one tag's dense numbers from the ranges this daemon took
// (sequence_store/sequence_node.hpp): the current range, and the next one fetched in
// the background before the current runs out. No clock, no worker ID.
//
// The request path is one atomic step: (generation, offset) live in one
// 64-bit word, and a request adds its count to it. The generation names the
// range being handed out; its bounds sit in a small ring, written before the
// generation is published and read back checked (a seqlock), so a thread
// that stalled over several switches notices and tries again. Switching to
// the next range takes a mutex, once per range.
//
// Guarantees, for one buffer across all its threads:
//  - every number handed out lies in a range given to add(), and none twice;
//  - numbers handed out later by one thread are greater (ranges are added in
//    increasing order), and a batch is increasing;
//  - nothing at or below a floor given to drop_through() is handed out after
//    it returns;
//  - after close(), nothing at all.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace snowflake {

// The longest range the buffer takes at once: the offset's 32 bits, less
// room for requests that overshoot a used-up range before they notice.
inline constexpr std::int64_t kMaxSequenceRange = std::int64_t{1} << 31;

struct SequenceRange {
  std::int64_t start = 0;  // [start, end)
  std::int64_t end = 0;
  std::int64_t size() const { return end - start; }
  bool operator==(const SequenceRange&) const = default;
};

struct SequenceBufferState {
  std::int64_t current_left = 0;  // numbers left in the range being handed out
  std::int64_t current_size = 0;  // that range's size
  std::int64_t queued = 0;        // numbers in the ranges waiting behind it
  std::size_t ranges_queued = 0;
  std::optional<std::int64_t> first_unused{};  // the lowest number not handed out
};

class SequenceBuffer {
 public:
  SequenceBuffer();
  SequenceBuffer(const SequenceBuffer&) = delete;
  SequenceBuffer& operator=(const SequenceBuffer&) = delete;

  // Up to `count` numbers, increasing, appended to `out`; fewer (maybe none)
  // when the buffer runs dry. Never blocks.
  std::size_t take(std::size_t count, std::vector<std::int64_t>& out);

  // A range taken from ZooKeeper, above every range added before. Longer
  // than kMaxSequenceRange: queued in pieces. False (nothing added): out of
  // order, empty, or the buffer closed.
  bool add(SequenceRange r);

  // Nothing <= floor is handed out once this returns (a `seq raise`).
  void drop_through(std::int64_t floor);

  // Nothing is handed out once this returns; what is left stays readable in
  // state() (the first unused number, to give back).
  void close();

  SequenceBufferState state() const;

 private:
  struct Slot {
    std::atomic<std::uint64_t> generation{0};  // 0: being written
    std::atomic<std::int64_t> start{0};
    std::atomic<std::int64_t> size{0};
  };
  static constexpr std::size_t kSlots = 4;
  static constexpr std::uint64_t kOffsetBits = 32;
  static constexpr std::uint64_t kOffsetMask = (std::uint64_t{1} << kOffsetBits) - 1;

  // The range of `generation` as published, if its slot still holds it.
  std::optional<SequenceRange> range_of(std::uint64_t generation) const;
  // Called with mutex_ held: publishes the next queued range (or an empty
  // one) as the generation after `generation`, if that is still current.
  void advance_locked(std::uint64_t generation);
  void publish_locked(std::uint64_t generation, SequenceRange r);

  // (generation << 32) | offset into the generation's range.
  std::atomic<std::uint64_t> word_;
  std::array<Slot, kSlots> slots_{};
  mutable std::mutex mutex_;
  std::deque<SequenceRange> queue_;  // ranges behind the current one, increasing
  std::int64_t last_end_ = 0;        // the end of the newest range added
  std::int64_t floor_ = 0;           // drop_through's highest floor
  bool closed_ = false;
};

}  // namespace snowflake
