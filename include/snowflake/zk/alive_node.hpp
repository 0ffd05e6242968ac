#pragma once
// <root>/alive/<id>: an ephemeral node held by the ZooKeeper session of the
// daemon that owns worker ID <id>, in both strategies. Its data is the
// owner's token. Claiming, taking over or reusing an identity creates it in
// the same step, so none of them can proceed while another live session
// holds the worker ID; ZooKeeper removes it when that session ends.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/zk/cluster_tree.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct AliveHolder {
  std::optional<OwnerToken> owner;  // nullopt: data not ours to read
  std::int64_t session = 0;
  std::string describe() const;  // "host:port pid N (session 0x...)"
};

class AliveNodes {
 public:
  explicit AliveNodes(const std::string& root);

  const std::string& dir() const noexcept { return dir_; }
  std::string path(std::uint32_t id) const { return tree::worker_node(dir_, id); }
  // Creates alive/<id> for `owner`, bound to the session that runs the op.
  ZkOp create(std::uint32_t id, const OwnerToken& owner) const;
  // Two ops that fail the multi (node_exists) if anyone holds alive/<id>,
  // and otherwise leave nothing behind: ZooKeeper's multi has no "check that
  // a node is absent".
  std::array<ZkOp, 2> absent(std::uint32_t id) const;
  // Who holds alive/<id>; nullopt if nobody.
  Result<std::optional<AliveHolder>, CoordError> holder(ZkSession& zk, std::uint32_t id) const;
  // For a heartbeat's multi: our alive node made again if `held_by` is not
  // this session (the one that made it has expired), else checked to still
  // be there.
  ZkOp keep(ZkSession& zk, std::uint32_t id, const OwnerToken& owner, std::int64_t held_by) const;
  // A heartbeat's multi failed with `e`. If that was about alive/<id>,
  // corrects `held_by` and answers true (try again), or lost if another
  // run's session holds it; false if `e` is about something else. One of
  // `owner`'s own earlier sessions (given up on while ZooKeeper restarted,
  // and kept by it) is removed: nothing writes through it any more.
  Result<bool, CoordError> recover(ZkSession& zk, std::uint32_t id, const ZkError& e,
                                   const OwnerToken& owner, std::int64_t& held_by) const;
  // Removes alive/<id> if this session holds it (a worker ID we lost: let
  // whoever has it now hold it). Best effort: it goes with the session anyway.
  void let_go(ZkSession& zk, std::uint32_t id) const;

 private:
  std::string dir_;
};

}  // namespace snowflake::coord
