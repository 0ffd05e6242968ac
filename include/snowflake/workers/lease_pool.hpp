#pragma once
// Worker IDs leased to generators in other processes (DESIGN.md rule 10),
// kept in the recycle pool's own nodes, so that an ID made by a holder never
// collides with one a daemon hands out: one ID space.
//
//   <root>/pool/inuse/<id>   {owner, floor, ts, hwm, lease_ms}, as a daemon's,
//                            with owner {host: <holder>, port 0, pid 0,
//                            instance: "lease:<SHA-256 of the token, hex>"}
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

#include "snowflake/workers/recycle_pool.hpp"

namespace snowflake::coord {

// What a holder is told after a take or a renewal.
struct LeaseTerms {
  std::uint32_t worker_id = 0;
  std::chrono::milliseconds duration{0};  // counted from when the holder sent its request
  // The first Unix ms it may stamp (past anything an earlier holder of the
  // worker ID could have used), and the last under this grant.
  std::int64_t first_timestamp_ms = 0;
  std::int64_t max_timestamp_ms = 0;
  std::string token;  // a take's only: the secret that renews and gives back
};

// Why a renewal or give-back found no lease: the node is gone, another's, or
// (renewal) ZooKeeper's records show the lease over before it came.
inline constexpr std::string_view kLeaseLostPrefix = "lease lost: ";

class LeasePool {
 public:
  explicit LeasePool(const std::string& root, std::uint32_t max_worker_id);

  // A free worker ID for `holder`, for `duration` from `now_ms` (our wall
  // clock). Errors as RecyclePool::claim (pool_exhausted, floors_ahead
  // beyond `max_wait`, zookeeper).
  Result<LeaseTerms, CoordError> take(ZkSession& zk, const std::string& holder,
                                      std::chrono::milliseconds duration, std::int64_t now_ms,
                                      std::chrono::milliseconds max_wait);

  // The lease on `worker_id` whose token is `token`, extended to now_ms +
  // duration; `last_used_ms` (the holder's last stamp, if it says) kept as
  // the node's high-water mark. lost: not that lease (any more), or late.
  Result<LeaseTerms, CoordError> renew(ZkSession& zk, std::uint32_t worker_id,
                                       std::string_view token, std::chrono::milliseconds duration,
                                       std::int64_t now_ms,
                                       std::optional<std::int64_t> last_used_ms);

  // Returns the worker ID to notuse with the floor the holder's last stamp
  // leaves (its time fence if it does not say). lost: not that lease.
  Result<void, CoordError> give_back(ZkSession& zk, std::uint32_t worker_id, std::string_view token,
                                     std::optional<std::int64_t> last_used_ms);

  // The owner a token's lease is written with.
  static OwnerToken owner_of(const std::string& holder, std::string_view token);
  // Whether a pool node's owner is a lease (not a daemon's run).
  static bool is_lease(const OwnerToken& owner);

  RecyclePool& pool() noexcept { return pool_; }
  // Written nodes remembered for one-request renewals; forgotten on a new
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
  void remember(std::uint32_t worker_id, Written w);

  RecyclePool pool_;
  std::map<std::uint32_t, Written> written_;
};

}  // namespace snowflake::coord
