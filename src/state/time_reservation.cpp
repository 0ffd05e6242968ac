#include "snowflake/state/time_reservation.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include "snowflake/base/thread_name.hpp"

namespace snowflake::state {

TimeReservation::TimeReservation(const StateDir& dir, std::chrono::milliseconds interval,
                                 Clock& clock)
    : dir_(dir), interval_(interval), clock_(clock) {}

TimeReservation::~TimeReservation() { stop(); }

void TimeReservation::start() {
  thread_ = std::thread([this] {
    name_this_thread("persist");
    loop();
  });
}

void TimeReservation::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TimeReservation::loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    persist(false);
    lock.lock();
  }
}

void TimeReservation::attach(IdGenerator& generator, StateRecord record) {
  {
    std::lock_guard lock(mutex_);
    generator_ = &generator;
    // Never below the generator's floor (its high-water mark before any ID),
    // whatever the clock says now: a run that crashes while its clock is
    // behind must leave its successor the floor it was given, not its clock.
    // A reservation made earlier for this worker ID binds it too.
    record.hwm = generator.high_water_mark_ms();
    record.reserved_until = record.hwm;
    if (have_record_ && record_.worker_id == record.worker_id) {
      record.reserved_until = std::max(record.reserved_until, record_.reserved_until);
    }
    record_ = std::move(record);
    have_record_ = true;
    // Nothing new until a write has recorded it.
    generator.set_reservation_ms(record_.hwm);
  }
  persist(false);
}

void TimeReservation::detach(bool final_write) {
  if (final_write) persist(true);
  std::lock_guard lock(mutex_);
  generator_ = nullptr;
}

void TimeReservation::forget_owner() {
  std::lock_guard lock(mutex_);
  if (!have_record_) return;
  record_.owner.reset();
  if (auto saved = dir_.save(record_); !saved) {
    spdlog::warn("cannot write the state file: {}", saved.error());
  }
}

std::int64_t TimeReservation::reserved_until(std::uint32_t worker_id) const {
  std::lock_guard lock(mutex_);
  return have_record_ && record_.worker_id == worker_id ? record_.reserved_until : 0;
}

void TimeReservation::persist(bool final_write) {
  std::lock_guard lock(mutex_);
  IdGenerator* generator = generator_;
  if (!generator) return;
  StateRecord r = record_;
  r.hwm = generator->high_water_mark_ms();
  // Never lower the reservation while issuing: it is the next run's floor.
  // Never above the time fence either (ZooKeeper modes; static mode has
  // none): the generator cannot stamp past it, so a wall clock stepped far
  // ahead (a bad RTC read) must not make the next run wait for it. The final
  // write, after the generator is closed, can say exactly.
  r.reserved_until =
      final_write ? r.hwm
                  : std::max(record_.reserved_until,
                             std::min(clock_.wall_ms() + kReserveIntervals * interval_.count(),
                                      generator->fence_ms()));
  if (auto saved = dir_.save(r); !saved) {
    if (failures_++ % 100 == 0) {
      spdlog::error("cannot write the state file: {}; IDs stop once its reservation runs out",
                    saved.error());
    }
    return;
  }
  failures_ = 0;
  record_ = r;
  // A closed generator ignores this: a write racing a loss cannot reopen it.
  if (!final_write) generator->set_reservation_ms(r.reserved_until);
}

}  // namespace snowflake::state
