#pragma once
// What the coordinator asks of a ZooKeeper worker-ID strategy (sequential,
// recycle): acquire a worker ID with its floor and our proof of ownership,
// renew it, give it back. The coordinator owns everything around these
// questions: the lease, the time fence, the heartbeat schedule, the state
// file, the clock checks. Internal to the coordinator.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/base/clock.hpp"
#include "snowflake/workers/recycle_pool.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct AcquireRequest {
  std::int64_t now_ms = 0;        // wall clock, written by the claim: the time fence's base
  BootClock::time_point now{};    // monotonic, before the claim was sent
  std::int64_t max_floor_ms = 0;  // floors beyond this are out of reach (now + max_boot_wait)
};

// What ZooKeeper said of one of our writes: its time, and its place in
// ZooKeeper's history (the transaction's zxid).
struct WriteStamp {
  std::int64_t mtime_ms = 0;
  std::int64_t zxid = 0;
  // Writes refused first because the pool moved meanwhile (a release or a
  // reclaim elsewhere bumps its count), each read and sent again.
  std::uint32_t retried = 0;
};

struct Ownership {
  std::uint32_t worker_id = 0;
  std::string node;
  OwnerToken owner;
  std::int64_t floor = 0;         // the last instant an earlier owner may have used
  std::int64_t confirmed_ts = 0;  // the wall time our node holds: the time fence's base
  // No later than the moment the claim was sent: the lease's base. For a
  // claim whose answer was lost, the first attempt that may have applied it.
  BootClock::time_point sent{};
  // ZooKeeper's time of the claim, if its answer arrived just now (a clock
  // check may use it; a recovered claim's time is old).
  std::optional<std::int64_t> fresh_mtime_ms;
  // The claim's zxid, if its answer arrived just now (cluster_history.hpp).
  std::optional<std::int64_t> fresh_zxid{};
};

// When did the claim that ZooKeeper may have applied go out? A claim whose
// answer was lost is found by reading later; its lease must count from the
// first attempt that failed unanswered since the last settled one.
class UnansweredClaims {
 public:
  void failed(BootClock::time_point attempt) {
    if (!first_) first_ = attempt;
  }
  // The lease's base for a claim found now; forgets the failures.
  BootClock::time_point settle(bool answered, BootClock::time_point attempt) {
    const auto sent = answered || !first_ ? attempt : std::min(*first_, attempt);
    first_.reset();
    return sent;
  }

 private:
  std::optional<BootClock::time_point> first_;
};

class WorkerStrategy {
 public:
  virtual ~WorkerStrategy() = default;

  // Errors to retry: zookeeper, pool_exhausted, floors_ahead, held,
  // unusable. Fatal ones (CoordError::fatal) end the daemon.
  virtual Result<Ownership, CoordError> acquire(ZkSession& zk, const AcquireRequest& request) = 0;
  // A heartbeat of the owned worker ID: returns ZooKeeper's stamp of the
  // write. lost: it is not ours any more; vanished: not ours, where no rule
  // lets anyone take it from an owner whose lease runs.
  virtual Result<WriteStamp, CoordError> renew(ZkSession& zk, std::int64_t ts,
                                               std::int64_t hwm) = 0;
  // Gives the owned worker ID back; the next owner starts above `floor`.
  virtual Result<void, CoordError> give_back(ZkSession& zk, std::int64_t floor) = 0;
  // The owned worker ID was lost: forget it, and let go of its alive node
  // if our session still holds it.
  virtual void forget(ZkSession* zk) = 0;
  // Returns other daemons' stale worker IDs to the pool, judged by
  // ZooKeeper's time (`zk_now_ms`, or read afresh). Only the pool has any.
  virtual Result<ReapResult, CoordError> reap(ZkSession&, std::optional<std::int64_t>) {
    return ReapResult{};
  }
  // Where the watches of reaper_watch_fired() are left: a watch firing on a
  // child of it calls that (on the coordinator's thread). Empty: none.
  virtual std::string reapers_dir() const { return {}; }
  // The reaper's role may have passed to us: the next reap looks.
  virtual void reaper_watch_fired() noexcept {}
  virtual bool reaper() const noexcept { return false; }
  // The same for the claimers' line (acquire() answers in_line while others
  // are ahead): the claimer just ahead of us left, so our turn may be here.
  virtual std::string claimers_dir() const { return {}; }
  virtual void claim_watch_fired() noexcept {}
  // Where the reaper's pass leaves a watch on the children (the pool's
  // alive nodes): one going (a stop, a session's end) wakes the coordinator
  // for a pass soon, so stopped daemons' marked IDs come back within
  // seconds, not at the next heartbeat. Empty: none.
  virtual std::string alive_dir() const { return {}; }
};

}  // namespace snowflake::coord
