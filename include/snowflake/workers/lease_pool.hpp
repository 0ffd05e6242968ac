#pragma once
// Worker IDs leased to generators in other processes (DESIGN.md rule 10),
// kept in the recycle pool's own nodes, so that an ID made by a holder never
// collides with one a daemon hands out: one ID space.
//
//   <root>/pool/inuse/<id>   {owner, floor, ts, hwm, lease_ms}, as a daemon's,
//                            with owner {host: <holder>, port 0, pid 0,
//                            instance: "lease:<SHA-256 of the token, hex>"}
//
// A named pool (other layouts: sonyflake's 16-bit machine ID, CosId's
// namespaces) is the same under <root>/lease_pools/<name>, with worker IDs of
// its own bit width; the cluster's fence bounds it as it does the cluster's
// pool (a wipe lost its records too).
//
// A lease's node has no alive node (the holder has no ZooKeeper session), so
// the reaper returns it to notuse once its last write is older than
// reclaim_after by ZooKeeper's clock, as it does a daemon's that died; the
// config keeps every lease's duration + safety_margin + max_skew within
// reclaim_after. `ts` is the granting daemon's wall clock at the write, and
// the holder may stamp nothing after ts + lease_ms (its time fence, rule 1):
// the floor the next owner starts above, whatever the holder's clock did.
//
// The token is the holder's secret: only its digest is written, so neither
// ZooKeeper's readers nor `lease list` can renew or give back another's
// lease. Any daemon of the cluster renews any lease (the lease lives in
// ZooKeeper); the one that wrote it last does it in one request.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/ids/layout.hpp"
#include "snowflake/workers/recycle_pool.hpp"

namespace snowflake::coord {

// What a holder is told after a take or a renewal.
struct LeaseTerms {
  std::uint32_t worker_id = 0;
  std::chrono::milliseconds duration{0};  // counted from when the holder sent its request
  // The first Unix ms it may stamp: the start of the first time unit past
  // anything an earlier holder of the worker ID could have used, the
  // cluster's migration floor and its fence. The last: its time fence,
  // anywhere in whose unit it may still stamp.
  std::int64_t first_timestamp_ms = 0;
  std::int64_t max_timestamp_ms = 0;
  std::string token;    // a take's only: the secret that renews and gives back
  int worker_bits = 0;  // a named pool's (LeasePoolSettings::worker_bits)
};

// Why a renewal or give-back found no lease: the node is gone, another's, or
// (renewal) ZooKeeper's records show the lease over before it came.
inline constexpr std::string_view kLeaseLostPrefix = "lease lost: ";

struct LeasePoolSettings {
  std::string root;  // the cluster's: its fence (and, for its own pool, its migration floor)
  // Where the pool lives: the cluster root for its own pool, a named pool's
  // node (tree::lease_pool) for the others.
  std::string pool_root;
  std::uint32_t max_worker_id = 0;
  // The cluster's layout, for its own pool: stamps in its time unit, above
  // its migration floor. nullopt: a named pool, whose holders' layout is
  // their own: their first stamp at a whole second (right for any time unit
  // that divides a second, on an epoch at a whole second).
  std::optional<IdLayout> layout;
  // safety_margin + max_skew: how far past its end by ZooKeeper's records
  // a lease is judged over (the two writes compared may carry two servers'
  // clocks, and the holder's deadline must surely have passed).
  std::chrono::milliseconds margin{0};
  // Free worker IDs a take leaves for daemons (leases.reserved_worker_ids).
  std::uint32_t reserved = 0;
  int worker_bits = 0;  // a named pool's; 0: the cluster's own

  // The cluster's own pool: one ID space with the daemons.
  static LeasePoolSettings cluster(const std::string& root, const IdLayout& layout,
                                   std::chrono::milliseconds margin, std::uint32_t reserved) {
    return {root, root, layout.max_worker_id(), layout, margin, reserved};
  }
  // A named pool of 2^worker_bits worker IDs, none reserved (no daemon takes one).
  static LeasePoolSettings named(const std::string& root, const std::string& name, int worker_bits,
                                 std::chrono::milliseconds margin) {
    return {root,
            tree::lease_pool(root, name),
            (std::uint32_t{1} << worker_bits) - 1,
            std::nullopt,
            margin,
            0,
            worker_bits};
  }
};

class LeasePool {
 public:
  explicit LeasePool(LeasePoolSettings settings);

  // A free worker ID for `holder`, for `duration` from `now_ms` (our wall
  // clock). Errors as RecyclePool::claim (pool_exhausted, also when only the
  // reserved IDs are left; floors_ahead beyond `max_wait`; zookeeper, also
  // when the root's floor or fence rose while it was taken).
  // `token`: the one to write (a CosId machine's, made from its instance:
  // lease_service.hpp); none: a fresh random one.
  Result<LeaseTerms, CoordError> take(ZkSession& zk, const std::string& holder,
                                      std::chrono::milliseconds duration, std::int64_t now_ms,
                                      std::chrono::milliseconds max_wait,
                                      std::optional<std::string> token = std::nullopt);

  // The lease on `worker_id` whose token is `token`, extended to now_ms +
  // duration (0: the lease's own; its time fence never moves back); `last_used_ms` (the
  // holder's last stamp, if it says) kept as the node's high-water mark.
  // lost: not that lease (any more); late (its write came over lease_ms +
  // margin after the last: given back); or started at or below a migration
  // floor or fence raised since (left to run out).
  Result<LeaseTerms, CoordError> renew(ZkSession& zk, std::uint32_t worker_id,
                                       std::string_view token, std::chrono::milliseconds duration,
                                       std::int64_t now_ms,
                                       std::optional<std::int64_t> last_used_ms);

  // Returns the worker ID to notuse with the floor the holder's last stamp
  // leaves (its time fence if it does not say). lost: not that lease.
  Result<void, CoordError> give_back(ZkSession& zk, std::uint32_t worker_id, std::string_view token,
                                     std::optional<std::int64_t> last_used_ms);

  // A lease as its node records it (`lease list`).
  struct Record {
    std::uint32_t worker_id = 0;
    InuseData data;  // owner.host: the holder; ts + lease_ms: its time fence
  };
  // Every lease of this pool (a daemon's own worker ID left out), by worker ID.
  Result<std::vector<Record>, CoordError> list(ZkSession& zk);
  // An operator's give-back without the token (`lease forget`): the worker
  // ID back to notuse above the lease's time fence, so that its next holder
  // starts past anything this one may still stamp. Returns that floor.
  // lost: no lease on it (free, or a daemon's).
  Result<std::int64_t, CoordError> forget(ZkSession& zk, std::uint32_t worker_id);

  // The owner a token's lease is written with.
  static OwnerToken owner_of(const std::string& holder, std::string_view token);
  // Whether a pool node's owner is a lease (not a daemon's run).
  static bool is_lease(const OwnerToken& owner);

  RecyclePool& pool() noexcept { return pool_; }
  // Written nodes remembered for one-write renewals; forgotten on a new
  // session (their move counts are still right, but a cache need not be).
  void forget_writes() { written_.clear(); }

 private:
  // Our last answered write of a lease's node: a renewal that finds it
  // unchanged (the pool's move count and the node's version) needs no read.
  struct Written {
    std::string instance;
    InuseData data;
    std::int32_t version = 0;
    std::int64_t czxid = 0;
    std::int64_t mtime_ms = 0;
    std::int32_t move_count = 0;
  };
  // The node and its move count read now; lost unless `instance`'s.
  Result<Written, CoordError> read_lease(ZkSession& zk, std::uint32_t worker_id,
                                         const std::string& instance);
  // The last instant the cluster root forbids (its migration floor's unit,
  // its fence's end); INT64_MIN: none. Read after a write that grants, on
  // its session, it sees whatever was recorded before that write (a
  // command recording one after it sees our node: migration_floor.hpp).
  Result<std::int64_t, CoordError> root_bound(ZkSession& zk) const;
  // The first stamp past `floor` (a node's floor: an instant someone may
  // have used), at the start of the next time unit.
  std::int64_t first_after(std::int64_t floor) const;
  // A lease whose last stamp comes before its first (a floor ahead).
  bool too_short(const LeaseTerms& terms) const;
  void remember(std::uint32_t worker_id, Written w);

  LeasePoolSettings settings_;
  RecyclePool pool_;
  std::map<std::uint32_t, Written> written_;
};

}  // namespace snowflake::coord
