#include "snowflake/zk/alive_node.hpp"

#include <fmt/format.h>

namespace snowflake::coord {

std::string AliveHolder::describe() const {
  return fmt::format("{} (ZooKeeper session 0x{:x})",
                     owner ? owner->describe() : "an unknown owner", session);
}

AliveNodes::AliveNodes(const std::string& root) : dir_(tree::alive_dir(root)) {}

ZkOp AliveNodes::create(std::uint32_t id, const OwnerToken& owner) const {
  return ZkOp::create_ephemeral(path(id), encode(owner));
}

std::array<ZkOp, 2> AliveNodes::absent(std::uint32_t id) const {
  return {ZkOp::create(path(id), ""), ZkOp::remove(path(id), -1)};
}

Result<std::optional<AliveHolder>, CoordError> AliveNodes::holder(ZkSession& zk,
                                                                  std::uint32_t id) const {
  BOOST_OUTCOME_TRY(node, zk.try_get(path(id)));
  if (!node) return std::optional<AliveHolder>();
  return std::optional<AliveHolder>(
      AliveHolder{decode_owner(node.value().data), node.value().stat.ephemeral_owner});
}

ZkOp AliveNodes::keep(ZkSession& zk, std::uint32_t id, const OwnerToken& owner,
                      std::int64_t held_by) const {
  return held_by == zk.session_id() ? ZkOp::check(path(id), -1) : create(id, owner);
}

Result<bool, CoordError> AliveNodes::recover(ZkSession& zk, std::uint32_t id, const ZkError& e,
                                             const OwnerToken& owner, std::int64_t& held_by) const {
  if (e.path != path(id)) return false;
  if (e.code == ZkErrc::no_node) {  // removed by hand: make it again
    held_by = 0;
    return true;
  }
  if (e.code != ZkErrc::node_exists) return false;
  BOOST_OUTCOME_TRY(found, holder(zk, id));
  if (found && found->session != zk.session_id() && found->owner == owner) {
    // This run's, from a session it gave up on: a ZooKeeper restarted
    // slower than the session timeout keeps it, while we opened another.
    // Taken for another run's, it would look like a node ZooKeeper lost.
    if (auto removed = zk.remove(path(id), -1);
        !removed && removed.error().code != ZkErrc::no_node) {
      return CoordError::from(removed.error());
    }
    held_by = 0;
    return true;
  }
  if (found && found->session != zk.session_id()) {
    return CoordError{CoordErrc::lost,
                      fmt::format("{} is held by {}", path(id), found->describe())};
  }
  held_by = found ? found->session : 0;  // made by a write of ours whose answer was lost
  return true;
}

void AliveNodes::let_go(ZkSession& zk, std::uint32_t id) const {
  auto node = zk.exists(path(id));
  if (node && node.value() && node.value()->ephemeral_owner == zk.session_id()) {
    (void)zk.remove(path(id), node.value()->version);
  }
}

}  // namespace snowflake::coord
