#pragma once
// Keeps the local state file's reservation ahead of the wall clock, on a
// thread of its own: the generator issues only up to a time the file has
// durably recorded, so a restart after kill -9 starts above every ID issued,
// even if the clock was set back meanwhile. Every mode uses it, static too.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/generator.hpp"
#include "snowflake/state/state_dir.hpp"

namespace snowflake::state {

// The state file reserves this many persist intervals ahead of the clock, so
// that slow writes (an fsync stuck behind a busy disk, a starved thread) do
// not stop issuing. The cost: an immediate restart after kill -9 waits out
// up to this much (config requires max_boot_wait_ms to cover it).
inline constexpr int kReserveIntervals = CoordinatorSettings::kReserveIntervals;

class TimeReservation {
 public:
  TimeReservation(const StateDir& dir, std::chrono::milliseconds interval,
                  Clock& clock = SystemClock::instance());
  ~TimeReservation();
  TimeReservation(const TimeReservation&) = delete;
  TimeReservation& operator=(const TimeReservation&) = delete;

  void start();
  void stop();  // idempotent

  // From now on keeps `generator` ahead, recording `record` (worker ID, node,
  // owner token, layout) with it. Writes at once; nothing can be issued
  // before a write succeeds. `generator` must outlive the attachment.
  void attach(IdGenerator& generator, StateRecord record);
  // The attached generator was closed. final_write: record its high-water
  // mark as the reservation, exact now that nothing more can be issued.
  void detach(bool final_write);
  // Rewrites the record without its owner token: the worker ID was given
  // back, so a restart has nothing to take over.
  void forget_owner();
  // What this run has reserved for `worker_id`; 0 if nothing.
  std::int64_t reserved_until(std::uint32_t worker_id) const;

 private:
  void loop();
  void persist(bool final_write);

  const StateDir& dir_;
  const std::chrono::milliseconds interval_;
  Clock& clock_;

  mutable std::mutex mutex_;  // everything below; held across a write (one writer at a time)
  std::condition_variable wake_;
  bool stopping_ = false;
  IdGenerator* generator_ = nullptr;
  StateRecord record_{};
  bool have_record_ = false;
  std::int64_t failures_ = 0;
  std::thread thread_;
};

}  // namespace snowflake::state
