#pragma once
// Owns this daemon's worker ID for the ZooKeeper strategies: acquires it
// (with the boot clock checks), keeps it with a heartbeat thread that extends
// the lease and the time fence, notices when it is lost and acquires
// another, reaps other daemons' stale worker IDs, and gives it back on
// shutdown. The state directory (locked for our lifetime) and its time
// reservation are what let the generator issue at all.
//
// The HTTP side sees only the WorkerSlot, the Lease and the gauges.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/base/zookeeper_clock.hpp"
#include "snowflake/cluster/cluster_history.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/worker_slot.hpp"
#include "snowflake/state/state_dir.hpp"
#include "snowflake/state/time_reservation.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

class WorkerStrategy;
struct Ownership;
struct CoordError;

struct CoordinatorOptions {
  CoordinatorType strategy = CoordinatorType::recycle;  // sequential or recycle
  ZkSettings zookeeper;
  std::string root;
  CoordinatorSettings settings;
  GeneratorOptions generator;
  std::string advertise;  // "host:port": our name (sequential) and owner token
  std::string state_dir;
  std::string opaque_key;  // the opaque key's fingerprint, recorded in the root; "": none
  FormPolicy forms;        // forms.default and forms.tags, recorded in the root
  // Told of ZooKeeper's clock at each claim and heartbeat (the periods of
  // sequences are judged by it); nullptr: nobody asks.
  ZooKeeperClock* zookeeper_clock = nullptr;
};

class Coordinator {
 public:
  // Called once, from the coordinator's thread, when the daemon must exit
  // (layout or strategy mismatch, clock skewed at boot, worker IDs exhausted);
  // `permanent`: a restart cannot cure it (CoordError::permanent).
  using FatalHandler = std::function<void(const std::string& why, bool permanent)>;

  Coordinator(CoordinatorOptions options, const IdLayout& layout, WorkerSlot& slot, Lease& lease,
              CoordinationGauges& gauges, FatalHandler on_fatal);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Locks the state directory, reads the state file and starts the threads.
  // A directory another process holds, or a damaged state file, is an error
  // (the daemon exits rather than share a floor or lose it).
  Result<void, std::string> start();
  // Once the HTTP side has drained: stops the threads, closes the generator,
  // records the final high-water mark and returns the worker ID with it as
  // the floor. Idempotent.
  void shutdown();

  // The ZooKeeper session now, nullptr while there is none: the sequence
  // supplier sends its requests over it too, so a daemon holds one session
  // and one connection. Only the coordinator replaces it (expired,
  // refused after a restore); a sharer takes up the new one when it asks.
  std::shared_ptr<ZkSession> session() const;

  // The worker ID held now, as a strict sequence's owner record names it
  // (strict_owner.hpp): its ID, its node (which each heartbeat writes) and
  // this run's token; nullopt while none is held. Thread-safe.
  struct HeldWorker {
    std::uint32_t worker_id = 0;
    std::string node;
    std::string token;
  };
  std::optional<HeldWorker> held_worker() const;

  // What this daemon knows of its cluster's history, from its state
  // directory on: the sequence supplier shares it. Valid after start().
  ClusterHistory& history() noexcept { return *history_; }

  // For the watchdog and /health: is the heartbeat thread running, and not
  // stuck in one step (a ZooKeeper call, a state-file write) for longer than
  // `limit`, nor overdue from a wait by longer (a thread that is never
  // scheduled again, or stopped)? Thread-safe.
  bool heartbeat_thread_healthy(std::chrono::milliseconds limit) const;

 private:
  enum class Step { ok, idle, retry, lost, fatal };

  void run();
  Step tick();
  Step connect();
  // zk_ replaced, under session_mutex_.
  void set_session(std::shared_ptr<ZkSession> session);
  // A new session in zk_: its watcher, its root to check, our ownership to
  // verify at once.
  void adopt_session();
  // The root, checked on every new session: layout, strategy, and the
  // cluster's identity against what this daemon knows (cluster_history.hpp).
  Step check_root();
  std::unique_ptr<WorkerStrategy> make_strategy(std::optional<state::StateRecord> predecessor);
  // ZooKeeper lost some of the cluster's history: reported, and acted on.
  void history_lost(HistoryLoss kind, const std::string& detail);
  // A loss reported (by us or the supplier): stop issuing at once and owe
  // the cluster its fence.
  void act_on_loss();
  // Writes what a loss owes: the root's fence and every sequence frozen.
  // False: not yet (ZooKeeper away).
  bool settle_loss();
  // The root's fence as read: gauges, and the generator's floor.
  void apply_fence(const std::optional<ClusterFence>& fence);
  // Nothing at or below this (Unix ms): the migration floor and the fence.
  std::int64_t cluster_floor_ms() const;
  // The fence is further ahead than a claim may wait for (the next owner
  // would only hold a worker ID idle): its end, else nullopt.
  std::optional<std::int64_t> fence_out_of_reach() const;
  // Our lease, counted from our last write ZooKeeper confirmed, still runs.
  bool lease_runs() const;
  // A claim or heartbeat whose read of the fence was sent at `read_at`
  // grants no lease if that read went out before the grace of the
  // connection that answered it was over (coordinator.restore_grace_ms;
  // docs/design.md, "A restore, and the grace"), unless cluster create
  // vouched for the cluster in the ZooKeeper run the session was made and
  // is still in (cluster_vouch.hpp). Sets grace_end_.
  bool held_for_grace(BootClock::time_point read_at);
  // A write of ours sent when the highest zxid seen was `before` answered
  // with `zxid`: false (and the loss acted on) if ZooKeeper's history is
  // behind what we saw.
  bool history_follows(std::int64_t before, std::int64_t zxid, std::string_view what);
  Step acquire();
  // A claim that failed: said (or waited for, in the claimers' line), and a
  // standby reaps if it holds that role.
  Step not_acquired(const CoordError& e, BootClock::time_point now);
  Step renew();
  // Builds the generator above the floor and publishes it with its lease
  // and time fence. Fails only if the clock fell behind the floor meanwhile.
  // `held_for_grace`: installed without a lease (the next heartbeat grants it).
  bool install(const Ownership& owned, bool held_for_grace);
  // After every claim and heartbeat: measures the wall clock against
  // ZooKeeper's (the mtime of a write sent and answered between the two wall
  // readings), and holds the lease while it is off by more than max_skew
  // (503 clock_skew), releasing it once it is back within. Off at the first
  // measurement after boot: the daemon must not start.
  enum class Skew { within, held, refuse_start };
  Skew judge_clock_skew(std::int64_t sent_wall_ms, std::int64_t received_wall_ms,
                        std::int64_t zk_mtime_ms);
  // A worker ID just claimed but not to be used: given back, or, if that
  // fails, let go of (its alive node), as if lost.
  void give_back_unused(const Ownership& owned);
  std::string skew_description() const;
  // The wall time a claim or heartbeat writes as its ts (the time fence's
  // base, and the floor of whoever takes the worker ID without proof that
  // we are dead): the wall clock, but never further ahead of ZooKeeper's time
  // than max_skew, judged by our last write's mtime moved on by the monotonic
  // clock since it was sent. A clock stepped far ahead (a bad RTC read) would
  // otherwise put its step into that floor, and the next owner would wait it
  // out (hours) for IDs we never issued: we hold issuing while skewed, and
  // the fence, set from what was written, keeps us below it anyway.
  std::int64_t ts_to_write(BootClock::time_point sent, std::int64_t wall_ms) const;
  void saw_zookeeper_time(BootClock::time_point sent, std::int64_t mtime_ms);  // answered now
  // A pass of the reaper (if the role is ours); false: it failed or left
  // IDs for later (ReapResult::incomplete).
  bool reap(std::optional<std::int64_t> zk_now_ms);
  // Reads the cluster root's migration floor and fence, leaving a watch on
  // the root so that a raise wakes us; raises the generator's floor to
  // them. False if ZooKeeper could not be read, or the root is gone or names
  // another cluster (then the next step checks it again).
  bool read_migration_floor();
  // What the root's form policy says against ours (ClusterForms).
  void read_form_policy(std::string_view root_data);
  // The cluster's form policy as last read (or, once checked, ours): what a
  // later root check records if it has to make the root again.
  std::optional<FormPolicy> cluster_forms_;
  // Confirms the floor in force for this session, once per session and floor.
  void confirm_migration_floor();
  // Logs a retry reason at warning level once, then at debug while it repeats.
  void log_retry(const std::string& why);
  void lose(const std::string& why);
  void fail(const std::string& why, bool permanent);
  Step setback(const CoordError& e, std::string_view doing);
  bool wait_for(std::chrono::milliseconds d);  // false: stopping
  // wait_for on the heartbeat thread: the wait is not a step (watchdog).
  bool idle_for(std::chrono::milliseconds d);
  // A step begins now, or a wait of `d` (it must end by then).
  void mark_progress(std::chrono::milliseconds d = std::chrono::milliseconds(0)) noexcept;

  CoordinatorOptions options_;
  const IdLayout& layout_;
  WorkerSlot& slot_;
  Lease& lease_;
  CoordinationGauges& gauges_;
  FatalHandler on_fatal_;
  Clock& clock_ = SystemClock::instance();
  OwnerToken token_;

  std::unique_ptr<state::StateDir> state_dir_;
  std::unique_ptr<state::TimeReservation> reservation_;
  std::unique_ptr<WorkerStrategy> strategy_;
  // Written by the coordinator's thread only, under session_mutex_ (read
  // there without it); session() hands it to the sequences.
  std::shared_ptr<ZkSession> zk_;
  mutable std::mutex session_mutex_;
  std::unique_ptr<RefusedSessionWatch> refusal_watch_;
  bool root_checked_ = false;  // on this session
  std::unique_ptr<ClusterHistory> history_;
  std::optional<ClusterFence> fence_;  // the root's, as last read
  std::uint64_t episodes_handled_ = 0;
  bool fence_owed_ = false;   // a loss was found, the root's fence is still to be written
  bool freeze_owed_ = false;  // and the sequences to be frozen
  std::string loss_reason_;   // the fence's reason
  // When our last write that ZooKeeper confirmed was sent (the lease's base).
  BootClock::time_point last_confirmed_sent_{};
  // The migration floor (migration_floor.hpp): in force, and confirmed for
  // which session. INT64_MIN: none.
  std::int64_t migration_floor_ms_ = INT64_MIN;
  std::int64_t confirmed_floor_ms_ = INT64_MIN;
  std::int64_t confirmed_session_ = 0;
  std::uint64_t root_events_seen_ = 0;
  std::uint64_t reaper_events_seen_ = 0;
  std::uint64_t claim_events_seen_ = 0;
  std::uint64_t alive_events_seen_ = 0;
  std::string reapers_dir_;   // the strategy's, fixed at the start
  std::string claimers_dir_;  // the same
  std::string alive_dir_;     // the same
  // A pass of the reaper owed to an alive node's going, gathered for a
  // moment (a fleet stopping at once: its marks in a few passes).
  std::optional<BootClock::time_point> release_pass_due_;
  bool skew_checked_ = false;  // the first measurement after boot is fatal if off
  bool skew_held_ = false;
  // Our last write that ZooKeeper answered: when it was sent, and its mtime.
  std::optional<std::pair<BootClock::time_point, std::int64_t>> zookeeper_time_seen_;
  std::string last_retry_;
  std::set<std::uint32_t> reported_unreadable_;
  // Owned worker ID (written by the heartbeat thread only).
  mutable std::mutex held_mutex_;
  std::optional<HeldWorker> held_;  // under held_mutex_: held_worker()
  void set_held(std::optional<HeldWorker> held);
  IdGenerator* generator_ = nullptr;
  std::uint32_t worker_id_ = 0;
  std::int64_t owned_floor_ = 0;
  BootClock::time_point next_heartbeat_{};
  BootClock::time_point grace_end_{};     // of the connection last judged
  std::optional<ClusterVouch> vouch_{};   // the root's, as last read
  std::int64_t vouch_noted_session_ = 0;  // said in the log for this session
  BootClock::time_point next_reap_{};
  std::chrono::milliseconds backoff_{};

  std::mutex mutex_;  // stopping_, root_events_
  std::condition_variable wake_;
  bool stopping_ = false;
  // Changes of the cluster root ZooKeeper told us of (its watch), counted:
  // each wakes the heartbeat thread to read the floor.
  std::uint64_t root_events_ = 0;
  // Watches fired on a candidate for the reaper (candidate_line.hpp); under mutex_.
  std::uint64_t reaper_events_ = 0;
  // And on the claimer ahead of us in the claimers' line; under mutex_.
  std::uint64_t claim_events_ = 0;
  // And on the pool's alive nodes (the reaper's watch); under mutex_.
  std::uint64_t alive_events_ = 0;
  bool shut_down_ = false;

  // By when the heartbeat thread must have moved on (monotonic ns): the
  // start of its current step, or the end of its current wait. Past it by
  // more than a limit, the thread is stuck (or not scheduled at all).
  std::atomic<std::int64_t> progress_due_ns_{0};
  std::atomic<bool> thread_running_{false};

  std::thread heartbeat_thread_;
};

}  // namespace snowflake::coord
