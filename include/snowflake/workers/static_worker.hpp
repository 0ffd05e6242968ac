#pragma once
// Strategy `static`: the worker ID comes from the config, with no ZooKeeper
// (one machine, or trying the daemon out). It keeps a floor like the other
// strategies: the state directory is locked, and the state file's
// reservation, written ahead of every ID, is the next run's floor, so kill -9,
// a clock set back and a restart never repeat an ID.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "snowflake/ids/generator.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/runtime/worker_slot.hpp"
#include "snowflake/state/state_dir.hpp"
#include "snowflake/state/time_reservation.hpp"

namespace snowflake::coord {

class StaticWorker {
 public:
  // `migration_floor_ms`: coordinator.min_id's floor (migration_floor.hpp).
  StaticWorker(std::string state_dir, std::uint32_t worker_id, const IdLayout& layout,
               GeneratorOptions generator, std::chrono::milliseconds persist_interval,
               std::optional<std::int64_t> migration_floor_ms = std::nullopt);
  ~StaticWorker();
  StaticWorker(const StaticWorker&) = delete;
  StaticWorker& operator=(const StaticWorker&) = delete;

  // Locks the state directory and installs a generator above the last run's
  // reservation. A clock behind it (set back while we were down) is waited
  // out up to generator.max_floor_wait_ms; beyond that the daemon starts and
  // answers 503 clock_moved_backwards until the clock has passed it.
  Result<void, std::string> start(WorkerSlot& slot);
  // After the HTTP side has drained: closes the generator and records its
  // final high-water mark. Idempotent.
  void shutdown();

 private:
  std::string state_dir_;
  std::uint32_t worker_id_;
  const IdLayout& layout_;
  GeneratorOptions generator_options_;
  std::chrono::milliseconds persist_interval_;
  std::optional<std::int64_t> migration_floor_ms_;
  std::unique_ptr<state::StateDir> dir_;
  std::unique_ptr<state::TimeReservation> reservation_;
  IdGenerator* generator_ = nullptr;
};

}  // namespace snowflake::coord
