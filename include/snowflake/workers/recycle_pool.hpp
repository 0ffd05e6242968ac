#pragma once
// Strategy `recycle`: a pool of worker IDs for daemons whose addresses change
// on every deploy (containers).
//
//   <root>/pool                 {"size": N, "complete": true} once filled
//   <root>/pool/init-lock       ephemeral: held by the daemon filling the pool
//   <root>/pool/clock           written to read ZooKeeper's time (its mtime)
//   <root>/pool/reapers/<s>-<n> ephemeral: candidates for the reaper (candidate_line.hpp)
//   <root>/pool/claimers/<s>-<n> ephemeral: daemons waiting to claim, one at a time
//   <root>/pool/notuse/<id>     free, {floor}
//   <root>/pool/inuse/<id>      owned, {owner, floor, ts, hwm, lease_ms}
//   <root>/alive/<id>           ephemeral, held by the owner's session (alive_node.hpp)
//
// Every move between notuse and inuse is one zoo_multi. Every move that
// deletes an inuse node (a release, a reclaim), and a takeover, also bumps
// the version of <root>/pool/inuse's own data: that version counts those
// moves. Every move, and a heartbeat, acts on an earlier reading (a claim on
// the free node's floor, a reclaim on a stale node, a heartbeat on its own
// node) and requires that count unchanged, so a node deleted and created
// again under the same name (whose version would start over) is never
// mistaken for the one that was read. A claim checks the count without
// bumping it: it deletes only a notuse node, which a release or a reclaim
// (bumping) made, so claims of other IDs fail neither each other nor the
// owners' heartbeats.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snowflake/zk/alive_node.hpp"
#include "snowflake/zk/cluster_tree.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/node_change_watch.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

// The owner instance of a worker ID leased to a holder we do not run
// (lease_pool.hpp): "lease:" and the token's digest.
inline constexpr std::string_view kLeaseInstancePrefix = "lease:";

struct PoolClaim {
  std::uint32_t worker_id = 0;
  std::string path;  // <root>/pool/inuse/<id>
  InuseData data;    // as the node holds it
  std::int32_t version = 0;
  std::int64_t czxid = 0;     // identifies this incarnation of the node
  std::int64_t mtime_ms = 0;  // ZooKeeper's time of our last write
  std::int64_t zxid = 0;      // and its place in ZooKeeper's history
  // The write's own answer arrived now, so mtime_ms is fresh (a clock check
  // may use it). False: a lost answer, recovered by reading the node later.
  bool answered = true;
  std::int64_t alive_session = 0;  // the session holding alive/<id> for us; 0: none known
  // The pool's move count just after our last answered write of the node
  // (claim, takeover, heartbeat), when the node was ours at `version`: a
  // heartbeat whose multi requires that count unchanged needs no reading
  // first (one request at rest). nullopt: read it.
  std::optional<std::int32_t> move_count;
};

// One claim attempt's reading: a free worker ID, its floor, and the move
// count from before that reading.
struct ClaimPlan {
  std::uint32_t worker_id = 0;
  std::int32_t move_count = 0;
  std::int32_t notuse_version = 0;
  std::int64_t floor = 0;
};

// How a clean stop left its worker ID (RecyclePool::release).
enum class Release : std::uint8_t { returned, marked };

// What a pass of the reaper did.
struct ReapResult {
  int moved = 0;  // returned to notuse
  // Worker IDs in the pool and how many are in use (inuse nodes, after the
  // moves): for the metrics that predict exhaustion. In sequential mode:
  // the layout's worker IDs and how many ZooKeeper has handed out.
  std::optional<std::uint32_t> pool_size;
  std::uint32_t in_use = 0;
  std::vector<std::uint32_t> held;        // stale, but their owner's session is alive
  std::vector<std::uint32_t> unreadable;  // stale, data unreadable: floor unknown, left alone
  // Some IDs were left for a later pass (a batch's answer lost, the pool
  // moving all along, the pass cut short): nothing else may come for them
  // before the next heartbeat's pass.
  bool incomplete = false;
};

class RecyclePool {
 public:
  RecyclePool(const std::string& root, std::uint32_t max_worker_id);

  // Creates the pool if needed: idempotent and safe against concurrent first
  // boots and a crash halfway (the next boot completes it). Waits up to
  // `patience` for another daemon that is filling it.
  Result<void, CoordError> ensure(ZkSession& zk, std::chrono::milliseconds patience);

  // Takes a free worker ID whose floor is at most `max_floor_ms`, starting at
  // a random one; `data.owner` is ours, data.floor is raised to the node's.
  // IDs whose floor cannot be read are skipped (see unusable()). Errors:
  // pool_exhausted, floors_ahead (free IDs exist, all with floors beyond
  // max_floor_ms), zookeeper (a lost answer is checked first next time).
  // `with`: one more op for the move's multi (leaving the claimers' line
  // in the same transaction).
  // `alive`: with an alive node for the claim (a daemon's, bound to this
  // session); a lease for a holder we do not run has none (lease_pool.hpp).
  Result<PoolClaim, CoordError> claim(ZkSession& zk, const InuseData& data,
                                      std::int64_t max_floor_ms,
                                      const std::optional<ZkOp>& with = std::nullopt,
                                      bool alive = true);
  // The two halves of one claim attempt. plan_claim: lost (not free),
  // unusable (its floor cannot be read). commit_claim: one multi that moves
  // it only if the pool has not moved since the plan (else lost), creating
  // our alive node (held: another session has it).
  Result<ClaimPlan, CoordError> plan_claim(ZkSession& zk, std::uint32_t worker_id);
  Result<PoolClaim, CoordError> commit_claim(ZkSession& zk, const ClaimPlan& plan, InuseData data,
                                             const std::optional<ZkOp>& with = std::nullopt,
                                             bool alive = true);

  // After a crash that we can prove (state_dir.hpp): if inuse/<worker_id>
  // still carries `previous`, make it ours (`data.owner`) without going
  // through notuse; data.floor is raised to the node's floor and high-water
  // mark. An earlier takeover of ours whose answer was lost is recognised.
  // Errors: lost (not `previous`'s, or held by a stranger), held (the
  // session of `previous` has not ended yet), floors_ahead, zookeeper.
  Result<PoolClaim, CoordError> take_over(ZkSession& zk, std::uint32_t worker_id,
                                          const OwnerToken& previous, InuseData data,
                                          std::int64_t max_floor_ms);

  // Versioned write of {ts, hwm}, and our alive node made again after a new
  // session; answers how many writes a move elsewhere refused first. lost:
  // the node is gone or not ours any more (stop issuing). zookeeper: retry.
  Result<std::uint32_t, CoordError> heartbeat(ZkSession& zk, PoolClaim& claim, std::int64_t ts,
                                              std::int64_t hwm);

  // Returns to notuse every other inuse node whose last write is older than
  // `reclaim_after` by ZooKeeper's clock, measured against `zk_now_ms`, and
  // whose owner's session has ended; and older than its own recorded lease
  // + the margin (a lease granted by a daemon with a longer reclaim_after,
  // or to a holder we do not run, is never cut short; set_lease_margins); or,
  // at once, marked released by its owner's clean stop (release()). The
  // floor it leaves is the owner's last possible instant
  // (InuseData::last_possible_ms: a mark's last stamp).
  Result<ReapResult, CoordError> reclaim_stale(ZkSession& zk, std::int64_t zk_now_ms,
                                               std::chrono::milliseconds reclaim_after,
                                               std::optional<std::uint32_t> our_worker_id);
  // The same, asking `zk_now` for ZooKeeper's time only if some inuse node
  // has no alive node (it may cost a write: ZkSession::time_of_write).
  // `between_batches`, if given, is called between two batches of reads: a
  // pass over a large pool's leases (65,536 in a 16-bit pool, each read)
  // lets its thread's other work in meanwhile; false ends the pass there
  // (the daemon is stopping).
  Result<ReapResult, CoordError> reclaim_stale(
      ZkSession& zk, const std::function<Result<std::int64_t, CoordError>()>& zk_now,
      std::chrono::milliseconds reclaim_after, std::optional<std::uint32_t> our_worker_id,
      const std::function<bool()>& between_batches = {});
  // Worker IDs in use as last seen by any read of the pool (a heartbeat's,
  // a claim's, a pass's): the metrics' view on a daemon that does not reap.
  // nullopt: nothing read yet.
  std::optional<std::uint32_t> in_use_seen() const noexcept { return in_use_seen_; }
  std::uint32_t size() const noexcept { return max_worker_id_ + 1; }
  // Past a node's own lease, how long before it may be reclaimed: the
  // safety margin, and for a holder we do not run (lease_pool.hpp) the skew
  // bound too, as rule 10 has it. 0 until set.
  void set_lease_margins(std::chrono::milliseconds safety_margin,
                         std::chrono::milliseconds max_skew) noexcept {
    safety_margin_ = safety_margin;
    max_skew_ = max_skew;
  }
  const std::string& reapers_dir() const noexcept { return reapers_; }
  // A pass's listing of alive/ leaves a watch (the daemon's reaper: one
  // going wakes it for the next pass; WorkerStrategy::alive_dir).
  void watch_alive(bool on) noexcept { watch_alive_ = on; }
  // Stale or marked worker IDs returned in one multi (4 ops each and the
  // move: 512 are some 200 KB, well under ZooKeeper's 1 MB request limit).
  // Each multi bumps the move count once, refusing every running daemon's
  // next heartbeat write once: the daemons' pool returns a fleet's mass
  // stop in 512s. 64 by default: a lease pool's pass answers its holders'
  // renewals between batches (lease_service.cpp), each a batch's reads.
  void set_reclaim_batch(std::size_t ids) noexcept { batch_ = std::max<std::size_t>(1, ids); }
  const std::string& claimers_dir() const noexcept { return claimers_; }

  // A clean stop, once our generator has stopped issuing, `floor` its last
  // stamp: our node moved back to notuse carrying `floor` (returned), or,
  // when another move came first (a fleet stopping at once), marked
  // released with it (InuseData::released) for the reaper's next pass.
  Result<Release, CoordError> release(ZkSession& zk, const PoolClaim& claim, std::int64_t floor);

  // A node that serves only as ZooKeeper's clock (ZkSession::time_of_write).
  const std::string& clock_path() const noexcept { return clock_; }

  // Free worker IDs found with an unreadable floor so far (never claimed).
  const std::set<std::uint32_t>& unusable() const noexcept { return unusable_; }

  std::string inuse_path(std::uint32_t id) const { return tree::worker_node(inuse_, id); }
  std::string notuse_path(std::uint32_t id) const { return tree::worker_node(notuse_, id); }
  const AliveNodes& alive() const noexcept { return alive_; }
  const std::string& inuse_dir() const noexcept { return inuse_; }

  // The pool's move count (the version of inuse/'s own data), read now.
  Result<std::int32_t, CoordError> move_count(ZkSession& zk);

 private:
  // move_count(), leaving a watch on the count (heartbeat and release use it
  // to know, without a reading, whether the count they remember is still it).
  Result<std::int32_t, CoordError> watched_move_count(ZkSession& zk);
  // The count from a reading of inuse/ (its version; its children counted
  // into in_use_seen_).
  Result<std::int32_t, CoordError> counted(const Result<std::optional<NodeStat>, ZkError>& stat);
  // Reads an inuse node and checks `owner` holds it; lost if not.
  Result<std::pair<InuseData, NodeStat>, CoordError> read_owned(ZkSession& zk,
                                                                const std::string& path,
                                                                const OwnerToken& owner);
  // Reads inuse/<id>, checks it is ours, and finds our alive node: for a
  // write whose answer was lost.
  Result<PoolClaim, CoordError> read_claim(ZkSession& zk, std::uint32_t id,
                                           const OwnerToken& owner);
  Result<void, CoordError> fill(ZkSession& zk);
  // A stale inuse node, read: what its reclaim's multi checks and leaves.
  struct StaleNode {
    std::uint32_t id = 0;
    std::int32_t version = 0;
    std::int64_t last_possible_ms = 0;
  };
  // Of `ids`, those not `skipped` whose node is older than `reclaim_after`
  // at `now_ms` (unreadable ones reported in `result`).
  Result<std::vector<StaleNode>, CoordError> read_stale(
      ZkSession& zk, std::span<const std::uint32_t> ids, const std::set<std::uint32_t>& skipped,
      std::int64_t now_ms, std::chrono::milliseconds reclaim_after, ReapResult& result);
  // reclaim_stale's moves for up to batch_ IDs, in one multi: the
  // count read, then the nodes; an ID held or moved meanwhile is left, the
  // others sent again. Counted into `result`.
  Result<void, CoordError> reclaim_batch(ZkSession& zk, std::span<const std::uint32_t> ids,
                                         std::int64_t now_ms,
                                         std::chrono::milliseconds reclaim_after,
                                         ReapResult& result);

  std::string pool_;
  std::string inuse_;
  std::string notuse_;
  std::string lock_;
  std::string clock_;
  std::string reapers_;
  std::string claimers_;
  AliveNodes alive_;
  std::uint32_t max_worker_id_;
  std::chrono::milliseconds safety_margin_{0};
  std::chrono::milliseconds max_skew_{0};
  bool watch_alive_ = false;
  std::size_t batch_ = 64;
  std::mt19937_64 random_;
  // A claim whose outcome a lost connection hid: checked first next time.
  std::optional<std::uint32_t> unsure_claim_;
  std::set<std::uint32_t> unusable_;
  std::optional<std::uint32_t> in_use_seen_;
  // Whether the count a claim remembers may still be it (node_change_watch.hpp).
  NodeChangeWatch count_watch_;
  // By worker ID, ZooKeeper's time before which a node read fresh cannot be
  // stale (its mtime then + its threshold; a later write only moves it on):
  // a node without an alive node (a lease's, a dead daemon's) is read again
  // only then, not at every pass. Skipping delays a reclaim, never hastens it.
  std::map<std::uint32_t, std::int64_t> fresh_until_;
};

}  // namespace snowflake::coord
