#include "snowflake/coord/cluster_layout.hpp"

#include <fmt/format.h>

#include "snowflake/coord/node_data.hpp"

namespace snowflake::coord {

namespace {

std::string describe(const LayoutSettings& l) {
  return fmt::format("time_bits {}, worker_bits {}, sequence_bits {}, time_unit_ms {}, epoch_ms {}",
                     l.time_bits, l.worker_bits, l.sequence_bits, l.time_unit_ms, l.epoch_ms);
}

}  // namespace

std::string_view to_string(CoordErrc code) noexcept {
  switch (code) {
    case CoordErrc::zookeeper: return "zookeeper";
    case CoordErrc::layout_mismatch: return "layout_mismatch";
    case CoordErrc::workers_exhausted: return "workers_exhausted";
    case CoordErrc::pool_exhausted: return "pool_exhausted";
    case CoordErrc::lost: return "lost";
    case CoordErrc::clock: return "clock";
  }
  return "unknown";
}

Result<void, CoordError> check_cluster_layout(ZkSession& zk, const std::string& root,
                                              const LayoutSettings& ours) {
  const std::string mine = encode(ours);
  if (const auto slash = root.rfind('/'); slash > 0) {
    if (auto made = zk.ensure_path(root.substr(0, slash)); !made) return CoordError::from(made.error());
  }
  // Bounded: each round either settles or saw another writer win a race.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto created = zk.create(root, mine);
    if (created) return outcome::success();
    if (created.error().code != ZkErrc::node_exists) return CoordError::from(created.error());

    auto node = zk.get(root);
    if (!node) {
      if (node.error().code == ZkErrc::no_node) continue;  // deleted meanwhile
      return CoordError::from(node.error());
    }
    if (node.value().data.empty()) {
      // Created empty (by an operator, or by ensure_path of a deeper root):
      // claim it for our layout unless someone else does first.
      auto claimed = zk.set(root, mine, node.value().stat.version);
      if (claimed) return outcome::success();
      if (claimed.error().code == ZkErrc::bad_version || claimed.error().code == ZkErrc::no_node) continue;
      return CoordError::from(claimed.error());
    }
    const auto theirs = decode_layout(node.value().data);
    if (!theirs) {
      return CoordError{CoordErrc::layout_mismatch,
                        fmt::format("{} holds \"{}\", not an ID layout; is zookeeper.root shared "
                                    "with something else?",
                                    root, node.value().data)};
    }
    if (*theirs == ours) return outcome::success();
    return CoordError{CoordErrc::layout_mismatch,
                      fmt::format("the cluster at {} uses layout ({}); this daemon's is ({}). Mixed "
                                  "layouts can issue the same ID: use the cluster's layout or "
                                  "another zookeeper.root",
                                  root, describe(*theirs), describe(ours))};
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing while being read", root)};
}

}  // namespace snowflake::coord
