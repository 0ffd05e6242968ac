#pragma once
// The sequences this daemon serves, by tag: each tag's range buffer and
// what the supplier reports about it. Tags are only ever added (a sequence
// is never deleted under a running daemon), by one thread, the supplier's;
// the HTTP threads look them up without a lock: a fixed table of atomic
// pointers, open addressing, each entry published once it is whole.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/zookeeper_clock.hpp"
#include "snowflake/sequences/buffer.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/sequences/replies.hpp"
#include "snowflake/sequences/segment_calls.hpp"
#include "snowflake/sequences/strict_gate.hpp"

namespace snowflake {

class PeriodicSequence;  // periodic.hpp

// Relaxed atomics the supplier writes and /status and /metrics read.
struct SequenceGauges {
  std::atomic<std::int64_t> step{0};             // the size of the last range taken
  std::atomic<std::uint64_t> fetches{0};         // ranges taken
  std::atomic<std::uint64_t> fetch_failures{0};  // takes that failed (ZooKeeper away, ...)
  std::atomic<std::int64_t> left{0};             // numbers buffered, at the last look
  std::atomic<double> rate{0};                   // numbers per second handed out, smoothed
  std::atomic<std::uint64_t> handed_out{0};      // numbers handed out (the router counts)
  // Numbers handed out whole to other processes (CosId's segments): not in
  // the rate, which sizes this daemon's own ranges.
  std::atomic<std::uint64_t> segment_numbers{0};
  // Numbers taken for a request that was then refused (a batch the buffer
  // could not fill in time): a gap, not counted in the rate.
  std::atomic<std::uint64_t> dropped{0};
  // The last number the tag (its period) hands out, its --max (or its
  // template's largest), and how many of its numbers ZooKeeper held below
  // it after this daemon's last take: an alert warns before a period runs
  // out. -1 for both: no --max (2^63 - 2), or no range taken yet.
  std::atomic<std::int64_t> last_number{-1};
  std::atomic<std::int64_t> left_to_take{-1};
};

struct SequenceEntry {
  explicit SequenceEntry(std::string t);
  ~SequenceEntry();
  SequenceEntry(const SequenceEntry&) = delete;
  SequenceEntry& operator=(const SequenceEntry&) = delete;
  const std::string tag;
  SequenceBuffer buffer;
  SequenceGauges gauges;
  // A request asked for this tag: the supplier takes its first range then.
  std::atomic<bool> wanted{false};
  // Frozen: nothing is handed out (503 sequence_frozen) until `seq raise`
  // thaws it (sequence_store/sequence_node.hpp). Set before the buffer is emptied.
  std::atomic<bool> frozen{false};
  // ZooKeeper has no number left for this tag (coord::is_exhausted): once
  // the buffer is empty, 410 sequence_exhausted, without waiting.
  std::atomic<bool> exhausted{false};
  // A strict sequence (`seq create --order strict`): who may hand out.
  StrictGate strict;
  // The replies holding its numbers, not yet written (seq raise waits for
  // those from before its drop), and the requests waiting for numbers.
  RepliesInFlight replies;
  WakeList waiting;

  // How its numbers are printed (`seq create --template`), or nullptr: as
  // they are. Set once by the supplier, before the first range it took
  // joins the buffer: a request that took a number from it sees it.
  std::atomic<const FilledTemplate*> printed{nullptr};
  // Once: a later call changes nothing (a request may hold the first).
  void set_printed(FilledTemplate t) {
    if (printed_storage_) return;
    printed_storage_ = std::make_unique<const FilledTemplate>(std::move(t));
    printed.store(printed_storage_.get(), std::memory_order_release);
  }

  // A sequence that restarts each period (`seq create --reset`): its
  // numbers are in its periods' slots, not in this entry's buffer; nullptr
  // until the supplier has read its definition. Set once, like `printed`.
  std::atomic<PeriodicSequence*> periodic{nullptr};
  void set_periodic(std::unique_ptr<PeriodicSequence> p);

 private:
  std::unique_ptr<const FilledTemplate> printed_storage_;
  std::unique_ptr<PeriodicSequence> periodic_storage_;
};

class SequenceRegistry {
 public:
  // Room for `capacity` tags.
  explicit SequenceRegistry(std::size_t capacity);

  // The tag's entry, or nullptr: not a sequence this daemon knows (yet).
  // Lock-free; any thread.
  SequenceEntry* find(std::string_view tag) const noexcept;

  // Adds a tag (the supplier's thread only). Its entry, the existing one if
  // the tag is known; nullptr when the table is full.
  SequenceEntry* add(const std::string& tag);

  // Every tag added, in the order added. Any thread.
  std::vector<SequenceEntry*> entries() const;
  std::size_t capacity() const noexcept { return capacity_; }

  // The supplier's ZooKeeper session is connected (it writes, /status reads).
  std::atomic<bool> connected{false};
  // ZooKeeper's clock as the daemon last saw it (the coordinator's
  // heartbeats, the supplier's probes): a periodic tag's period is decided
  // by the wall clock only while it agrees with this.
  ZooKeeperClock zookeeper_clock;
  // The supplier has read the tags from ZooKeeper once: from then on a tag
  // not found is unknown (404); before, it may exist (a 503: not known yet).
  std::atomic<bool> listed{false};
  // Segments other processes asked for (CosId's segment distributor),
  // which the supplier takes on its next pass (request_refill wakes it).
  SegmentDesk segments;

  // A request that found a buffer dry asks the supplier to hurry; the
  // supplier waits for it (or its own period) between passes.
  void request_refill() noexcept;
  // Waits until request_refill() or `timeout`; true if asked.
  bool wait_for_request(std::chrono::milliseconds timeout);
  // Wakes every request waiting for any tag's numbers (ZooKeeper lost: a
  // dry tag's requests answer at once, no range will come).
  void wake_all_waiting() const;

 private:
  std::size_t slot_of(std::string_view tag) const noexcept;

  const std::size_t capacity_;
  std::vector<std::atomic<SequenceEntry*>> table_;  // a power of two, at least twice capacity_
  mutable std::mutex entries_mutex_;
  std::deque<std::unique_ptr<SequenceEntry>> owned_;  // under entries_mutex_
  std::atomic<bool> refill_requested_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
};

}  // namespace snowflake
