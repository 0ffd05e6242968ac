#include "snowflake/ids/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <thread>

#include "snowflake/base/mix64.hpp"

namespace snowflake {

namespace {

constexpr std::int64_t kNsPerMs = 1'000'000;
// Waiting for a deadline: sleep until this long before it, then spin. A
// sleep wakes up late by tens of microseconds (more on a VM); spinning the
// last stretch starts the next unit on time without burning a core for long.
constexpr std::int64_t kSpinMarginNs = 100'000;
// A spin is bounded so that a clock which does not move (a manual clock in a
// test) falls through to sleep_for, which advances it.
constexpr int kMaxSpins = 2000;
// The longest sleep between two readings of the wall clock while waiting: a
// clock stepped back (or forward) during a wait is judged this soon, instead
// of blocking the thread (an HTTP event loop) for the size of the step.
constexpr std::int64_t kWaitSliceNs = 2'000'000;

std::chrono::milliseconds ceil_ms(std::int64_t ns) {
  return std::chrono::milliseconds((ns + kNsPerMs - 1) / kNsPerMs);
}

// splitmix64, one stream per thread: only used when a new unit starts.
std::uint64_t thread_random() {
  thread_local std::uint64_t x =
      std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32);
  return splitmix64_finalize(x += 0x9E3779B97F4A7C15ULL);
}

}  // namespace

std::string_view to_string(GenerateErrc code) noexcept {
  switch (code) {
    case GenerateErrc::clock_moved_backwards:
      return "clock_moved_backwards";
    case GenerateErrc::clock_behind_floor:
      return "clock_behind_floor";
    case GenerateErrc::clock_before_epoch:
      return "clock_before_epoch";
    case GenerateErrc::time_exhausted:
      return "time_exhausted";
    case GenerateErrc::time_not_reserved:
      return "time_not_reserved";
    case GenerateErrc::lease_expired:
      return "lease_expired";
    case GenerateErrc::floor_ahead:
      return "floor_ahead";
  }
  return "unknown";
}

std::string GenerateError::message() const {
  switch (code) {
    case GenerateErrc::clock_moved_backwards:
      return fmt::format(
          "wall clock is {} ms behind the last issued ID; refusing until it "
          "catches up",
          gap.count());
    case GenerateErrc::clock_behind_floor:
      return fmt::format(
          "wall clock is {} ms behind the floor (the last time an earlier "
          "owner of this worker ID may have used)",
          gap.count());
    case GenerateErrc::clock_before_epoch:
      return fmt::format("wall clock is {} ms before the layout's epoch", gap.count());
    case GenerateErrc::time_exhausted:
      return "wall clock is past the layout's end of life; no more IDs can be issued";
    case GenerateErrc::time_not_reserved:
      return "the local state file has not recorded the current time yet (is its disk "
             "stalled?), or this worker ID is being released";
    case GenerateErrc::lease_expired:
      return "the wall clock has passed this daemon's time fence (the time of its last "
             "heartbeat ZooKeeper confirmed, plus lease_timeout_ms); it may not issue IDs until "
             "a heartbeat reaches ZooKeeper";
    case GenerateErrc::floor_ahead:
      return fmt::format(
          "the cluster's migration floor (snowflaked pool floor, or "
          "coordinator.min_id) is {} ms ahead of the wall clock: no ID at or below "
          "it is issued; IDs resume once the clock has passed it",
          gap.count());
  }
  return "unknown error";
}

Result<std::unique_ptr<IdGenerator>, GenerateError> IdGenerator::create(
    const IdLayout& layout, std::uint32_t worker_id, const GeneratorOptions& options,
    Clock& clock) {
  if (auto valid = layout.check_worker_id(worker_id); !valid) {
    throw std::invalid_argument(valid.error().message);
  }
  if (auto valid = layout.check_datacenter_id(options.datacenter_id); !valid) {
    throw std::invalid_argument(valid.error().message);
  }
  if (options.sequence_start == SequenceStart::random &&
      (options.random_sequence_bound < 1 ||
       options.random_sequence_bound - 1 > layout.max_sequence())) {
    throw std::invalid_argument("random_sequence_bound must be within 1 .. 2^sequence_bits");
  }
  std::unique_ptr<IdGenerator> generator(new IdGenerator(layout, worker_id, options, clock));

  // The first usable unit is the one after the floor's; wait for it if the
  // wall clock is behind, but only briefly: a big gap means a wrong clock.
  const std::int64_t first_ns =
      layout.unit_start_ms(generator->unit_of(generator->state_.load()) + 1) * kNsPerMs;
  const std::int64_t behind_ns = first_ns - clock.wall_ns();
  if (!options.floor_ms || behind_ns <= 0) return generator;
  const auto patience = std::chrono::nanoseconds(options.max_floor_wait);
  if (behind_ns > patience.count()) {
    if (options.start_behind_floor) return generator;  // refuses until the clock passes
    return GenerateError{GenerateErrc::clock_behind_floor, ceil_ms(behind_ns)};
  }
  // Bounded by the monotonic clock as well: a wall clock stepped back during
  // the wait must not stretch it.
  const auto give_up = clock.monotonic() + patience + std::chrono::milliseconds(100);
  int spins = 0;
  for (std::int64_t left = behind_ns; left > 0; left = first_ns - clock.wall_ns()) {
    if (clock.monotonic() > give_up) {
      if (options.start_behind_floor) return generator;
      return GenerateError{GenerateErrc::clock_behind_floor, ceil_ms(left)};
    }
    generator->wait_step(first_ns, spins);
  }
  return generator;
}

IdGenerator::IdGenerator(const IdLayout& layout, std::uint32_t worker_id,
                         const GeneratorOptions& options, Clock& clock)
    : layout_(layout),
      worker_id_(worker_id),
      machine_bits_(layout.machine_bits(options.datacenter_id, worker_id)),
      options_(options),
      clock_(clock),
      seq_bits_(layout.settings().sequence_bits),
      max_seq_(layout.max_sequence()),
      unit_is_ms_(layout.settings().time_unit_ms == 1),
      real_clock_(dynamic_cast<SystemClock*>(&clock) != nullptr) {
  // Start as if the floor's unit (or unit -1) were used up, so the first ID
  // lands in a later unit.
  const std::int64_t floor_unit =
      options.floor_ms ? std::max<std::int64_t>(layout.unit_of_ms(*options.floor_ms), -1) : -1;
  state_.store(pack(floor_unit, max_seq_));
}

std::uint32_t IdGenerator::first_sequence() const noexcept {
  if (options_.sequence_start == SequenceStart::zero) return 0;
  return static_cast<std::uint32_t>(thread_random() % options_.random_sequence_bound);
}

// Inlined into reserve() and check(): the one place that decides what the
// wall clock, read at now_ns, allows against the newest issued unit.
[[gnu::always_inline]] inline IdGenerator::Standing IdGenerator::judge(
    std::uint64_t state, std::int64_t now_ns) const noexcept {
  const std::int64_t now_ms = now_ns / kNsPerMs;
  const std::int64_t now_unit =
      unit_is_ms_ ? now_ms - layout_.settings().epoch_ms : layout_.unit_of_ms(now_ms);
  const std::int64_t last_unit = unit_of(state);
  if (now_unit > last_unit) [[likely]] {
    if (now_unit > layout_.max_time_unit()) [[unlikely]] {
      return {Standing::refused, now_unit, 0, GenerateError{GenerateErrc::time_exhausted}};
    }
    if (now_unit > ceiling_unit_.load(std::memory_order_relaxed)) [[unlikely]] {
      return {Standing::refused, now_unit, 0, ceiling_error(now_unit)};
    }
    return {Standing::new_unit, now_unit};
  }
  if (now_unit == last_unit) {
    if (seq_of(state) < max_seq_) return {Standing::same_unit, now_unit};
    return {Standing::sequence_used_up, now_unit, layout_.unit_start_ms(last_unit + 1) * kNsPerMs};
  }
  if (state & kClosedBit) {
    return {Standing::refused, now_unit, 0, GenerateError{GenerateErrc::time_not_reserved}};
  }
  if (now_unit < 0) {
    return {Standing::refused, now_unit, 0,
            GenerateError{GenerateErrc::clock_before_epoch,
                          ceil_ms(layout_.settings().epoch_ms * kNsPerMs - now_ns)}};
  }
  // The wall clock is behind the newest unit issued, or behind the cluster
  // floor that set it.
  const std::int64_t catch_up_ns = layout_.unit_start_ms(last_unit) * kNsPerMs;
  const std::int64_t gap_ns = catch_up_ns - now_ns;
  if (gap_ns > std::chrono::nanoseconds(options_.max_backward_wait).count()) {
    if (last_unit <= migration_floor_unit_.load(std::memory_order_relaxed)) {
      // IDs resume in the unit after the floor's.
      return {Standing::refused, now_unit, 0,
              GenerateError{GenerateErrc::floor_ahead,
                            ceil_ms(layout_.unit_start_ms(last_unit + 1) * kNsPerMs - now_ns)}};
    }
    return {Standing::refused, now_unit, 0,
            GenerateError{GenerateErrc::clock_moved_backwards, ceil_ms(gap_ns)}};
  }
  return {Standing::clock_behind, now_unit, catch_up_ns};
}

GenerateError IdGenerator::ceiling_error(std::int64_t now_unit) const noexcept {
  if (now_unit > fence_unit_.load(std::memory_order_relaxed)) {
    return GenerateError{GenerateErrc::lease_expired};
  }
  return GenerateError{GenerateErrc::time_not_reserved};
}

// Inlined into next(): it is the whole hot path.
[[gnu::always_inline]] inline Result<IdGenerator::Reservation, GenerateError> IdGenerator::reserve(
    std::uint32_t want) {
  int spins = 0;
  for (;;) {
    // Load the state before reading the clock: whoever stored it read its
    // clock earlier, so a later unit here is a real step back, not a race.
    std::uint64_t state = state_.load(std::memory_order_acquire);
    const Standing standing = judge(state, wall_ns());
    Reservation r;
    std::uint64_t next_state;
    switch (standing.kind) {
      case Standing::new_unit: {
        const std::uint32_t first = first_sequence();
        r = {standing.now_unit, first, std::min(want, max_seq_ - first + 1)};
        next_state = pack(standing.now_unit, first + r.count - 1);
        break;
      }
      case Standing::same_unit: {
        const std::uint32_t last_seq = seq_of(state);
        r = {standing.now_unit, last_seq + 1, std::min(want, max_seq_ - last_seq)};
        next_state = state + r.count;
        break;
      }
      case Standing::sequence_used_up:
        if (spins == 0) sequence_waits_.fetch_add(1, std::memory_order_relaxed);
        wait_step(standing.wait_until_ns, spins);
        continue;
      case Standing::clock_behind:
        if (spins == 0) backward_waits_.fetch_add(1, std::memory_order_relaxed);
        wait_step(standing.wait_until_ns, spins);
        continue;
      case Standing::refused:
        if (standing.error->code == GenerateErrc::clock_moved_backwards) {
          backward_refusals_.fetch_add(1, std::memory_order_relaxed);
        }
        return *standing.error;
    }
    // Losing the race means another thread issued first: start over with a
    // fresh clock reading, since its unit may be newer than our reading.
    if (state_.compare_exchange_strong(state, next_state, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) [[likely]] {
      return r;
    }
  }
}

std::optional<GenerateError> IdGenerator::check() const noexcept {
  const Standing standing = judge(state_.load(std::memory_order_acquire), wall_ns());
  if (standing.kind == Standing::refused) return standing.error;
  return std::nullopt;
}

Result<std::uint64_t, GenerateError> IdGenerator::next() {
  BOOST_OUTCOME_TRY(r, reserve(1));
  return layout_.compose_unit(r.unit, machine_bits_, r.first);
}

Result<void, GenerateError> IdGenerator::next_n(std::size_t n, std::vector<std::uint64_t>& out) {
  const std::size_t original_size = out.size();
  out.reserve(original_size + n);
  std::size_t remaining = n;
  while (remaining > 0) {
    const auto want = static_cast<std::uint32_t>(std::min<std::size_t>(remaining, max_seq_ + 1ULL));
    auto r = reserve(want);
    if (!r) {
      out.resize(original_size);
      return r.error();
    }
    // Consecutive sequences in one unit are one step apart (1 in Twitter's
    // order, the machine field's span in sonyflake's).
    const std::uint64_t first_id =
        layout_.compose_unit(r.value().unit, machine_bits_, r.value().first);
    const std::uint64_t step = layout_.sequence_step();
    for (std::uint32_t i = 0; i < r.value().count; ++i) out.push_back(first_id + i * step);
    remaining -= r.value().count;
  }
  return outcome::success();
}

void IdGenerator::wait_step(std::int64_t target_ns, int& spins) {
  const std::int64_t remaining = target_ns - wall_ns();
  if (remaining <= 0) return;
  if (remaining > kSpinMarginNs) {
    clock_.sleep_for(std::chrono::nanoseconds(std::min(remaining - kSpinMarginNs, kWaitSliceNs)));
    spins = std::max(spins, 1);  // counted as one wait, however many slices
  } else if (spins++ < kMaxSpins) {
    std::this_thread::yield();
  } else {
    clock_.sleep_for(std::chrono::nanoseconds(remaining));
  }
}

void IdGenerator::set_reservation_ms(std::int64_t until_ms) {
  std::lock_guard lock(ceiling_mutex_);
  reserved_unit_.store(layout_.unit_of_ms(until_ms), std::memory_order_relaxed);
  store_ceiling();
}

void IdGenerator::set_fence_ms(std::int64_t until_ms) {
  std::lock_guard lock(ceiling_mutex_);
  fence_ms_.store(until_ms, std::memory_order_relaxed);
  fence_unit_.store(layout_.unit_of_ms(until_ms), std::memory_order_relaxed);
  store_ceiling();
}

void IdGenerator::store_ceiling() {
  ceiling_unit_.store(std::min(reserved_unit_.load(std::memory_order_relaxed),
                               fence_unit_.load(std::memory_order_relaxed)),
                      std::memory_order_relaxed);
}

void IdGenerator::raise_migration_floor(std::int64_t floor_ms) noexcept {
  const std::int64_t unit = layout_.unit_of_ms(floor_ms);
  std::int64_t known = migration_floor_ms_.load(std::memory_order_relaxed);
  while (floor_ms > known && !migration_floor_ms_.compare_exchange_weak(known, floor_ms)) {
  }
  std::int64_t known_unit = migration_floor_unit_.load(std::memory_order_relaxed);
  while (unit > known_unit && !migration_floor_unit_.compare_exchange_weak(known_unit, unit)) {
  }
  // The floor's unit counts as used up: the next ID lands above it. A state
  // already past it (or closed) is left as it is.
  std::uint64_t state = state_.load(std::memory_order_acquire);
  while (!(state & kClosedBit) && unit_of(state) < unit &&
         !state_.compare_exchange_weak(state, pack(unit, max_seq_), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
  }
}

void IdGenerator::close() noexcept { state_.fetch_or(kClosedBit, std::memory_order_acq_rel); }

bool IdGenerator::closed() const noexcept {
  return (state_.load(std::memory_order_acquire) & kClosedBit) != 0;
}

std::int64_t IdGenerator::high_water_mark_ms() const noexcept {
  return layout_.unit_start_ms(unit_of(state_.load(std::memory_order_acquire) & ~kClosedBit));
}

IdGenerator::Stats IdGenerator::stats() const noexcept {
  return {sequence_waits_.load(std::memory_order_relaxed),
          backward_waits_.load(std::memory_order_relaxed),
          backward_refusals_.load(std::memory_order_relaxed)};
}

}  // namespace snowflake
