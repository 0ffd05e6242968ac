#include "snowflake/coord/cluster_root.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "snowflake/coord/node_data.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

std::string describe(const LayoutSettings& l) {
  return fmt::format("time_bits {}, worker_bits {}, sequence_bits {}, time_unit_ms {}, epoch_ms {}",
                     l.time_bits, l.worker_bits, l.sequence_bits, l.time_unit_ms, l.epoch_ms);
}

std::string encode_root(const LayoutSettings& layout, const std::string& strategy) {
  json j = json::parse(encode(layout));
  j["strategy"] = strategy;
  return j.dump();
}

// The strategy a root records; "" for a root written before they were.
std::string strategy_of(const std::string& data) {
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return "";
  const auto it = j.find("strategy");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string_view to_string(CoordErrc code) noexcept {
  switch (code) {
    case CoordErrc::zookeeper: return "zookeeper";
    case CoordErrc::layout_mismatch: return "layout_mismatch";
    case CoordErrc::strategy_mismatch: return "strategy_mismatch";
    case CoordErrc::workers_exhausted: return "workers_exhausted";
    case CoordErrc::pool_exhausted: return "pool_exhausted";
    case CoordErrc::floors_ahead: return "floors_ahead";
    case CoordErrc::held: return "held";
    case CoordErrc::unusable: return "unusable";
    case CoordErrc::lost: return "lost";
    case CoordErrc::clock: return "clock";
  }
  return "unknown";
}

Result<void, CoordError> check_cluster_root(ZkSession& zk, const std::string& root,
                                            const LayoutSettings& layout,
                                            const std::string& strategy) {
  const std::string mine = encode_root(layout, strategy);
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
    const std::string& data = node.value().data;
    const auto theirs = data.empty() ? std::optional(layout) : decode_layout(data);
    if (!theirs) {
      return CoordError{CoordErrc::layout_mismatch,
                        fmt::format("{} holds \"{}\", not an ID layout; is zookeeper.root shared "
                                    "with something else?",
                                    root, data)};
    }
    if (*theirs != layout) {
      return CoordError{CoordErrc::layout_mismatch,
                        fmt::format("the cluster at {} uses layout ({}); this daemon's is ({}). "
                                    "Mixed layouts can issue the same ID: use the cluster's "
                                    "layout or another zookeeper.root",
                                    root, describe(*theirs), describe(layout))};
    }
    const std::string recorded = strategy_of(data);
    if (recorded == strategy) return outcome::success();
    if (!recorded.empty()) {
      return CoordError{CoordErrc::strategy_mismatch,
                        fmt::format("the cluster at {} hands out worker IDs by the \"{}\" "
                                    "strategy; this daemon's coordinator.type is \"{}\". Two "
                                    "strategies on one root give out the same worker IDs: use "
                                    "the cluster's strategy or another zookeeper.root",
                                    root, recorded, strategy)};
    }
    // Created empty (by an operator, or by ensure_path of a deeper root), or
    // written before strategies were recorded: record ours unless someone
    // else does first.
    auto claimed = zk.set(root, mine, node.value().stat.version);
    if (claimed) return outcome::success();
    if (claimed.error().code == ZkErrc::bad_version || claimed.error().code == ZkErrc::no_node) continue;
    return CoordError::from(claimed.error());
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing while being read", root)};
}

}  // namespace snowflake::coord
