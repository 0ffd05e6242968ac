#pragma once
// Owns this daemon's worker ID for the ZooKeeper strategies: acquires it
// (with the boot clock checks), keeps it with a heartbeat thread that extends
// the lease, notices when it is lost and acquires another, and gives it back
// on shutdown. A second thread keeps the local state file's reservation ahead
// of the clock, which is what lets the generator issue.
//
// The HTTP side sees only the WorkerSlot, the Lease and the gauges.

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "snowflake/clock.hpp"
#include "snowflake/config.hpp"
#include "snowflake/coord/recycle_pool.hpp"
#include "snowflake/coord/sequential_worker.hpp"
#include "snowflake/coord/state_file.hpp"
#include "snowflake/coord/zk_session.hpp"
#include "snowflake/coordination_gauges.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/lease.hpp"
#include "snowflake/worker_slot.hpp"

namespace snowflake::coord {

struct CoordinatorOptions {
  std::string strategy;  // "sequential" | "recycle"
  ZkSettings zookeeper;
  std::string root;
  CoordinatorSettings settings;
  GeneratorOptions generator;
  std::string advertise;  // "host:port": our name (sequential) and owner token
  std::string state_dir;
};

class Coordinator {
 public:
  // Called once, from the coordinator's thread, when the daemon must exit
  // (layout mismatch, clock far off, worker IDs exhausted).
  using FatalHandler = std::function<void(const std::string& why)>;

  Coordinator(CoordinatorOptions options, const IdLayout& layout, WorkerSlot& slot, Lease& lease,
              CoordinationGauges& gauges, FatalHandler on_fatal);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Reads the state file and starts the threads; an unusable state file or
  // directory is an error (the daemon exits rather than lose its floor).
  Result<void, std::string> start();
  // Once the HTTP side has drained: stops the threads, closes the generator,
  // records the final high-water mark and (recycle) returns the worker ID to
  // the pool with it as the floor. Idempotent.
  void shutdown();

  // For the watchdog: is the heartbeat thread running, and not stuck in one
  // step (a ZooKeeper call, a state-file write) for longer than `limit`?
  // Its waits between steps do not count. Thread-safe.
  bool heartbeat_thread_healthy(std::chrono::milliseconds limit) const;

 private:
  struct Owned;
  enum class Step { ok, idle, retry, lost, fatal };

  void run();
  Step tick();
  void persist_loop();
  Step connect();
  Step acquire_sequential();
  Step acquire_recycle();
  Step heartbeat();
  bool start_from_cache();
  // Builds the generator above `floor`, reserves time in the state file and
  // publishes it. Fails (fatal at boot) if the clock is too far behind.
  Step install(std::uint32_t worker_id, std::string node, std::optional<OwnerToken> owner,
               std::int64_t floor);
  // Is the wall clock further from ZooKeeper's (the mtime of a write sent
  // and answered between the two wall readings) than max_skew?
  bool skewed(std::int64_t sent_wall_ms, std::int64_t received_wall_ms, std::int64_t zk_mtime_ms);
  // Holds (or releases) the lease for clock skew, logging each change.
  void hold_if_skewed(bool over);
  std::string skew_description() const;
  // The state file's reservation, if it speaks for this worker ID.
  std::int64_t local_floor(std::uint32_t worker_id) const;
  void lose(const std::string& why);
  void fail(const std::string& why);
  // A fatal error ends the daemon; any other is retried after a backoff.
  Step setback(const CoordError& e, std::string_view doing);
  bool wait_for(std::chrono::milliseconds d);  // false: stopping
  // wait_for on the heartbeat thread: the wait is not a step (watchdog).
  bool idle_for(std::chrono::milliseconds d);
  void persist(bool final_write);

  CoordinatorOptions options_;
  const IdLayout& layout_;
  WorkerSlot& slot_;
  Lease& lease_;
  CoordinationGauges& gauges_;
  FatalHandler on_fatal_;
  Clock& clock_ = SystemClock::instance();
  StateFile state_file_;
  std::optional<StateRecord> previous_;  // the state file as found at start
  OwnerToken token_;

  std::unique_ptr<ZkSession> zk_;
  std::optional<RecyclePool> pool_;
  std::optional<SequentialWorker> sequential_;
  std::unique_ptr<Owned> owned_;
  bool layout_checked_ = false;
  bool pool_ready_ = false;
  bool tried_takeover_ = false;
  bool skew_held_ = false;
  bool booting_ = true;
  std::chrono::steady_clock::time_point next_heartbeat_{};
  std::chrono::milliseconds backoff_{};

  std::mutex mutex_;  // stopping_, the record and generator the persister writes
  std::condition_variable wake_;
  bool stopping_ = false;
  bool shut_down_ = false;
  // The generator of the worker ID we own. Written only by the heartbeat
  // thread (which may read it without the lock); the persister reads it
  // under mutex_.
  IdGenerator* generator_ = nullptr;
  StateRecord record_{};
  std::int64_t reserved_until_ = 0;
  mutable std::mutex save_mutex_;  // one writer of the state file at a time

  // When the heartbeat thread's current step began (monotonic ns); 0 while
  // it waits, or once it has ended (see thread_running_).
  std::atomic<std::int64_t> step_started_ns_{0};
  std::atomic<bool> thread_running_{false};
  void mark_step(bool busy) noexcept;

  std::thread heartbeat_thread_;
  std::thread persist_thread_;
};

}  // namespace snowflake::coord
