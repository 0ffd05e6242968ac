#pragma once
// Strategy `sequential` (Meituan Leaf's): each daemon, named by host:port,
// owns the persistent sequential node <root>/forever/<host>:<port>-<seq> and
// its worker ID is <seq>. ZooKeeper numbers sequential children atomically,
// so concurrent first boots get distinct numbers; a restart finds its node
// by name and keeps its number. Numbers are never given back.

#include <cstdint>
#include <string>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/node_data.hpp"
#include "snowflake/coord/zk_session.hpp"

namespace snowflake::coord {

struct SequentialClaim {
  std::uint32_t worker_id = 0;
  std::string path;
  std::int64_t floor = 0;  // the node's last recorded high-water mark / heartbeat time
  std::int64_t mtime_ms = 0;  // ZooKeeper's time of our write (for the skew check)
};

class SequentialWorker {
 public:
  // `name` is "host:port".
  SequentialWorker(std::string root, std::string name, std::uint32_t max_worker_id);

  // Finds our node or creates it; writes {host, port, ts: now, hwm}.
  Result<SequentialClaim, CoordError> acquire(ZkSession& zk, std::int64_t now_ms);
  // Records {ts, hwm} in our node. Returns ZooKeeper's mtime of the write.
  Result<NodeStat, CoordError> heartbeat(ZkSession& zk, const SequentialClaim& claim,
                                         std::int64_t now_ms, std::int64_t hwm);

  const std::string& name() const noexcept { return name_; }

 private:
  // Our node among `children`, if any (the lowest number, should there be two).
  std::optional<std::pair<std::string, std::uint64_t>> find_ours(
      const std::vector<std::string>& children) const;
  SequentialData data(std::int64_t now_ms, std::int64_t hwm) const;

  std::string forever_;
  std::string name_;
  std::string host_;
  std::uint32_t port_;
  std::uint32_t max_worker_id_;
};

}  // namespace snowflake::coord
