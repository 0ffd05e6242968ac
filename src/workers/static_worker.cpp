#include "snowflake/workers/static_worker.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "snowflake/base/time_format.hpp"

namespace snowflake::coord {

StaticWorker::StaticWorker(std::string state_dir, std::uint32_t worker_id, const IdLayout& layout,
                           GeneratorOptions generator, std::chrono::milliseconds persist_interval,
                           std::optional<std::int64_t> migration_floor_ms)
    : state_dir_(std::move(state_dir)),
      worker_id_(worker_id),
      layout_(layout),
      generator_options_(generator),
      persist_interval_(persist_interval),
      migration_floor_ms_(migration_floor_ms) {}

StaticWorker::~StaticWorker() { shutdown(); }

Result<void, std::string> StaticWorker::start(WorkerSlot& slot) {
  auto dir = state::StateDir::open(state_dir_);
  if (!dir) return dir.error();
  dir_ = std::move(dir).value();
  GeneratorOptions g = generator_options_;
  g.start_behind_floor = true;  // no other worker ID to take: refuse until the clock passes
  // Any earlier run's reservation for this worker ID binds us, whatever its
  // mode: the same worker ID in the same layout composes the same IDs.
  if (const auto& r = dir_->previous();
      r && r->worker_id == worker_id_ && r->layout == layout_.settings()) {
    g.floor_ms = r->reserved_until;
  }
  auto created = IdGenerator::create(layout_, worker_id_, g);
  if (!created) {
    return fmt::format("cannot start the generator: {} ({})", created.error().message(),
                       to_string(created.error().code));
  }
  std::unique_ptr<IdGenerator> generator = std::move(created).value();
  if (const auto refusal = generator->check();
      refusal && refusal->code == GenerateErrc::clock_moved_backwards && g.floor_ms) {
    spdlog::warn(
        "the wall clock is behind the floor of worker ID {} ({}, the last instant our "
        "previous run may have used): not issuing until it has passed it",
        worker_id_, format_iso8601_ms(*g.floor_ms));
  }
  if (migration_floor_ms_) generator->raise_migration_floor(*migration_floor_ms_);
  reservation_ = std::make_unique<state::TimeReservation>(*dir_, persist_interval_);
  reservation_->attach(*generator, state::StateRecord{CoordinatorType::static_id, "", worker_id_,
                                                      "", std::nullopt, layout_.settings(), 0, 0});
  reservation_->start();
  generator_ = &slot.install(std::move(generator));
  return outcome::success();
}

void StaticWorker::shutdown() {
  if (!generator_) return;
  generator_->close();
  reservation_->detach(true);
  reservation_->stop();
  generator_ = nullptr;
}

}  // namespace snowflake::coord
