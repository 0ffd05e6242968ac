#pragma once
// Strategy `sequential` (Meituan Leaf's): each daemon, named by host:port,
// owns the persistent sequential node <root>/forever/<host>:<port>-<seq> and
// its worker ID is <seq>. ZooKeeper numbers sequential children atomically,
// so concurrent first boots get distinct numbers; a restart finds its node
// by name and keeps its number. Numbers are never given back.
//
// A name is an identity two daemons can share by mistake (cloned machines
// with one host name). So the identity is used only while holding its alive
// node (alive_node.hpp), and a daemon that takes it over starts above the
// last instant the previous holder could have used: its last written time
// plus its lease, unless the previous holder is proved to be our own dead
// predecessor (state_dir.hpp), whose state file knows a tighter floor.

#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/zk/alive_node.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct SequentialClaim {
  std::uint32_t worker_id = 0;
  std::string path;
  SequentialData data;  // as we last wrote it
  std::int32_t version = 0;
  std::int64_t mtime_ms = 0;  // ZooKeeper's time of our last write
  bool answered = true;       // that write's answer arrived now (mtime_ms is fresh)
  std::int64_t alive_session = 0;
  std::int64_t zxid = 0;  // our last write's place in ZooKeeper's history
};

// Our previous run on this machine, proved dead by the state directory.
struct Predecessor {
  OwnerToken owner;
  std::string node;
  std::int64_t reserved_until = 0;
};

class SequentialWorker {
 public:
  // `name` is "host:port".
  SequentialWorker(const std::string& root, std::string name, std::uint32_t max_worker_id);

  // Finds our node or creates it, takes its alive node, and writes {owner,
  // floor, ts: now_ms, hwm, lease_ms}. Errors: held (another live session
  // uses this identity; the message names it), floors_ahead (the floor is
  // beyond max_floor_ms: the alive node is given back), workers_exhausted,
  // unusable (the node's data cannot be read), zookeeper.
  Result<SequentialClaim, CoordError> acquire(ZkSession& zk, const OwnerToken& owner,
                                              std::int64_t now_ms, std::int64_t lease_ms,
                                              std::int64_t max_floor_ms,
                                              const std::optional<Predecessor>& predecessor);
  // Versioned write of {ts, hwm}; our alive node made again after a new
  // session. lost: another daemon wrote the node or holds the identity.
  Result<void, CoordError> heartbeat(ZkSession& zk, SequentialClaim& claim, std::int64_t now_ms,
                                     std::int64_t hwm);
  // Clean shutdown: records `floor` as the last instant we used (no lease
  // after it) and gives the alive node back.
  Result<void, CoordError> release(ZkSession& zk, SequentialClaim& claim, std::int64_t floor);

  // How many worker IDs (node numbers) ZooKeeper has handed out in this
  // cluster: numbers are never reused, so past the layout's last worker ID
  // no daemon with a new name can start.
  Result<std::uint32_t, CoordError> numbers_used(ZkSession& zk) const;

  const std::string& name() const noexcept { return name_; }
  const AliveNodes& alive() const noexcept { return alive_; }

 private:
  // Our node among `children`, if any (the lowest number, should there be two).
  std::optional<std::pair<std::string, std::uint64_t>> find_ours(
      const std::vector<std::string>& children) const;
  // Our alive node for worker ID `id`: ok, held, or an error.
  Result<void, CoordError> take_alive(ZkSession& zk, std::uint32_t id, const OwnerToken& owner);

  std::string forever_;
  AliveNodes alive_;
  std::string name_;
  std::string host_;
  std::uint32_t port_;
  std::uint32_t max_worker_id_;
};

}  // namespace snowflake::coord
