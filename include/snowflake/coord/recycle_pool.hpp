#pragma once
// Strategy `recycle`: a pool of worker IDs for daemons whose addresses change
// on every deploy (containers).
//
//   <root>/pool                 {"size": N, "complete": true} once filled
//   <root>/pool/init-lock       ephemeral: held by the daemon filling the pool
//   <root>/pool/notuse/<id>     free, {floor}
//   <root>/pool/inuse/<id>      owned, {owner, floor, ts, hwm, lease_ms}
//
// Every move between notuse and inuse is one zoo_multi, and every move also
// bumps the version of <root>/pool/inuse's own data: that version counts the
// pool's moves. Moves that act on an earlier reading (reclaiming a stale
// node, releasing or taking over our own) require that count unchanged, so a
// node deleted and created again under the same name (whose version would
// start over) is never mistaken for the one that was read.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/node_data.hpp"
#include "snowflake/coord/zk_session.hpp"

namespace snowflake::coord {

struct PoolClaim {
  std::uint32_t worker_id = 0;
  std::string path;     // <root>/pool/inuse/<id>
  InuseData data;       // as we last wrote it
  std::int32_t version = 0;
  std::int64_t czxid = 0;           // identifies this incarnation of the node
  std::int64_t mtime_ms = 0;        // ZooKeeper's time of our last write
};

class RecyclePool {
 public:
  RecyclePool(std::string root, std::uint32_t max_worker_id);

  // Creates the pool if needed: idempotent and safe against concurrent first
  // boots and a crash halfway (the next boot completes it). Waits up to
  // `patience` for another daemon that is filling it.
  Result<void, CoordError> ensure(ZkSession& zk, std::chrono::milliseconds patience);

  // Takes a free worker ID, starting at a random one. `data.owner` is ours;
  // data.floor is raised to the node's floor. pool_exhausted if none is free.
  Result<PoolClaim, CoordError> claim(ZkSession& zk, InuseData data);

  // After a crash: if inuse/<worker_id> still carries `previous`, make it
  // ours (`data.owner`) without going through notuse. lost if it does not.
  Result<PoolClaim, CoordError> take_over(ZkSession& zk, std::uint32_t worker_id,
                                          const OwnerToken& previous, InuseData data);

  // Versioned write of {ts, hwm}. lost: the node is gone or not ours any
  // more (stop issuing). zookeeper: retry.
  Result<void, CoordError> heartbeat(ZkSession& zk, PoolClaim& claim, std::int64_t ts,
                                     std::int64_t hwm);

  // Returns to notuse every other inuse node whose last write is older than
  // `reclaim_after` by ZooKeeper's clock, measured against `zk_now_ms` (the
  // mtime of our own fresh write). Returns how many it moved.
  Result<int, CoordError> reclaim_stale(ZkSession& zk, std::int64_t zk_now_ms,
                                        std::chrono::milliseconds reclaim_after,
                                        std::uint32_t our_worker_id);

  // Moves our node back to notuse carrying `floor`.
  Result<void, CoordError> release(ZkSession& zk, const PoolClaim& claim, std::int64_t floor);

  std::string inuse_path(std::uint32_t id) const { return inuse_ + "/" + std::to_string(id); }
  std::string notuse_path(std::uint32_t id) const { return notuse_ + "/" + std::to_string(id); }

 private:
  Result<std::int32_t, CoordError> move_count(ZkSession& zk);
  // Reads an inuse node and checks `owner` holds it; lost if not.
  Result<std::pair<InuseData, NodeStat>, CoordError> read_owned(ZkSession& zk, const std::string& path,
                                                                const OwnerToken& owner);
  // Reads inuse/<id> and checks it is ours; fills version/stat.
  Result<PoolClaim, CoordError> read_claim(ZkSession& zk, std::uint32_t id, const OwnerToken& owner);
  Result<void, CoordError> fill(ZkSession& zk);

  std::string pool_;
  std::string inuse_;
  std::string notuse_;
  std::string lock_;
  std::uint32_t max_worker_id_;
  std::mt19937_64 random_;
  // A claim whose outcome a lost connection hid: checked first next time.
  std::optional<std::uint32_t> unsure_claim_;
};

}  // namespace snowflake::coord
