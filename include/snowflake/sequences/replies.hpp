#pragma once
// Two things the requests of one sequence share with its supplier, beside
// the buffer (sequence_buffer.hpp):
//
//  - RepliesInFlight: the replies that hold the tag's numbers and are not
//    written yet, counted by epoch. `seq raise` is acknowledged only once
//    no number at or below its floor can still reach a client: the buffer
//    drops through the floor (nothing is reserved below it from then on),
//    then begin_drain() opens a new epoch, and the acknowledgement waits
//    until drained(): every reply counted in the epoch before has been
//    written or dropped. A request counts itself before it reserves a
//    number, in the epoch it read and read again after counting (a seq_cst
//    total order: if the second read still sees the old epoch, the count
//    precedes the flip, and the supplier's read of the count after the flip
//    sees it; if it sees the new one, the drop happened before and the
//    request reserves nothing below the floor).
//
//  - WakeList: the requests waiting for the tag's numbers (sequence waits
//    on the event loop, http/answer.hpp), woken all at once when something
//    they wait on changed: a range added, the tag frozen, thawed or
//    exhausted, ZooKeeper lost, the buffer closed.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "snowflake/sequences/in_flight_token.hpp"

namespace snowflake {

class RepliesInFlight {
 public:
  // Counted until the token is released (any thread). Before the numbers
  // are reserved.
  InFlightToken enter() noexcept;
  // The supplier's thread only, one drain at a time: a new epoch; the
  // replies of the one before are what drained() waits for.
  void begin_drain() noexcept;
  bool drained() const noexcept;
  // Any thread: no reply counted in either epoch (once nothing can enter
  // any more, it stays so: the entry may be freed).
  bool idle() const noexcept;

 private:
  std::atomic<std::uint64_t> epoch_{0};
  std::array<std::atomic<std::int64_t>, 2> in_flight_{};
};

class WakeList {
 public:
  using Wake = std::function<void()>;
  // Any thread; a wake whose owner has gone (expired) is skipped and pruned.
  void add(std::weak_ptr<const Wake> wake);
  // Calls every live wake once and forgets them all.
  void wake_all();

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<const Wake>> waiting_;
  std::size_t pruned_at_ = 16;  // the size at which expired ones are dropped next
};

}  // namespace snowflake
