#include "snowflake/migration/raise_floor.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/zk/alive_node.hpp"
#include "snowflake/zk/cluster_tree.hpp"
#include "snowflake/zk/node_data.hpp"

namespace snowflake::migration {

using coord::AliveNodes;
using coord::CoordErrc;
using coord::CoordError;
using coord::decode_inuse;
using coord::decode_sequential;
using coord::MigrationFloor;
using coord::recorded_floor;
using coord::with_floor;
using coord::worker_id_of_node;
using coord::ZkErrc;
using coord::ZkSession;
namespace tree = coord::tree;

namespace {

using nlohmann::json;

// The worker ID in a forever node's name, "<host>:<port>-<number>".
std::optional<std::uint32_t> sequential_worker(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return worker_id_of_node(name.substr(dash + 1));
}

// A node of an owner of a worker ID.
struct OwnerNode {
  std::uint32_t worker_id = 0;
  std::string path;
};

std::string owner_dir(const std::string& root, CoordinatorType strategy) {
  return strategy == CoordinatorType::recycle ? tree::inuse_dir(root) : tree::forever_dir(root);
}

Result<std::vector<OwnerNode>, CoordError> owner_nodes(ZkSession& zk, const std::string& root,
                                                       CoordinatorType strategy) {
  const std::string dir = owner_dir(root, strategy);
  BOOST_OUTCOME_TRY(names, zk.try_children(dir));
  if (!names) return std::vector<OwnerNode>{};
  std::vector<OwnerNode> out;
  for (const auto& name : names.value()) {
    const auto id =
        strategy == CoordinatorType::recycle ? worker_id_of_node(name) : sequential_worker(name);
    if (id) out.push_back({*id, tree::child(dir, name)});
  }
  return out;
}

// What an owner's node says of the leases that may still run.
struct OwnerLease {
  std::string owner;                  // "" when the node does not name one
  std::int64_t until_ms = INT64_MAX;  // ZooKeeper's time: the last write + the lease; unknown: max
  // An earlier owner the node's writer superseded while its lease ran
  // (sequential: SequentialData::superseded_until); 0 none.
  std::int64_t superseded_until_ms = 0;
};

// The node's leases; nullopt when the node is gone (given back meanwhile).
// A sequential node of 0.1 names no owner and no lease: `assumed_lease`
// stands in, as for the floor a daemon takes from it.
Result<std::optional<OwnerLease>, CoordError> owner_lease(ZkSession& zk, const OwnerNode& node,
                                                          CoordinatorType strategy,
                                                          std::chrono::milliseconds assumed_lease) {
  BOOST_OUTCOME_TRY(got, zk.try_get(node.path));
  if (!got) return std::optional<OwnerLease>{};
  const auto& data = got.value().data;
  const std::int64_t mtime = got.value().stat.mtime_ms;
  OwnerLease lease;
  if (strategy == CoordinatorType::recycle) {
    if (const auto inuse = decode_inuse(data)) {
      lease.owner = inuse->owner.describe();
      lease.until_ms = mtime + inuse->lease_ms;
    }
  } else if (const auto seq = decode_sequential(data)) {
    lease.superseded_until_ms = seq->superseded_until;
    if (seq->owner) lease.owner = seq->owner->describe();
    lease.until_ms = mtime + (seq->owner ? seq->lease_ms : assumed_lease.count());
  }
  return std::optional<OwnerLease>{lease};
}

// Whether the session's confirmation covers `floor_ms`.
Result<bool, CoordError> confirmed(ZkSession& zk, const std::string& root, std::int64_t session,
                                   std::int64_t floor_ms) {
  BOOST_OUTCOME_TRY(ack, zk.try_get(tree::floor_ack(root, session)));
  if (!ack) return false;
  const json j = json::parse(ack.value().data, nullptr, false);
  const auto acked = j.is_object() && j.contains("floor_ms")
                         ? json_integer<std::int64_t>(j.at("floor_ms"))
                         : std::nullopt;
  return acked && *acked >= floor_ms;
}

}  // namespace

Result<MigrationFloor, CoordError> raise_migration_floor(ZkSession& zk, const std::string& root,
                                                         const MigrationFloor& floor) {
  // Bounded: each round either settles or saw another writer win a race.
  for (int attempt = 0; attempt < 10; ++attempt) {
    BOOST_OUTCOME_TRY(node, zk.get(root));
    const auto recorded = recorded_floor(node.data);
    if (recorded && recorded->ms >= floor.ms && recorded->above_id >= floor.above_id)
      return *recorded;
    // Whichever is higher of each: the floor only ever rises.
    MigrationFloor raised = floor;
    if (recorded) {
      raised.ms = std::max(raised.ms, recorded->ms);
      raised.above_id = std::max(raised.above_id, recorded->above_id);
    }
    auto set = zk.set(root, with_floor(node.data, raised), node.stat.version);
    if (set) return raised;
    if (set.error().code != ZkErrc::bad_version) return CoordError::from(set.error());
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("{} kept changing while the floor was raised", root)};
}

Result<std::vector<UnconfirmedOwner>, CoordError> unconfirmed_owners(
    ZkSession& zk, const std::string& root, CoordinatorType strategy, std::int64_t floor_ms,
    std::chrono::milliseconds lease, std::chrono::milliseconds margin) {
  BOOST_OUTCOME_TRY(nodes, owner_nodes(zk, root, strategy));
  std::optional<std::int64_t> zk_now;
  const AliveNodes alive(root);
  std::vector<UnconfirmedOwner> out;
  // ZooKeeper's time, read once, after the first node that needs it (an
  // earlier reading only makes the later comparisons stricter).
  const auto zookeeper_time = [&]() -> Result<std::int64_t, CoordError> {
    if (!zk_now) {
      BOOST_OUTCOME_TRY(now, zk.time_of_probe(tree::time_probe_prefix(root)));
      // Without the right to make a probe node, nothing shows a lease over.
      zk_now = now.value_or(INT64_MIN);
    }
    return *zk_now;
  };
  for (const auto& node : nodes) {
    // The alive node first: its holder confirms for the owner.
    BOOST_OUTCOME_TRY(holder, alive.holder(zk, node.worker_id));
    if (holder) {
      BOOST_OUTCOME_TRY(ok, confirmed(zk, root, holder->session, floor_ms));
      if (!ok) {
        out.push_back(
            {node.worker_id, holder->describe(), "its session has not confirmed the floor"});
        continue;
      }
      if (strategy == CoordinatorType::recycle)
        continue;  // a recycled worker ID has no earlier owner left
    }
    // Then the node, read after the alive node, with any heartbeat that
    // re-created it: without a live session its owner may still issue until
    // its lease runs out, and an owner it superseded until that one's does.
    BOOST_OUTCOME_TRY(leases, owner_lease(zk, node, strategy, lease));
    if (!leases) continue;  // given back meanwhile
    if (!holder) {
      BOOST_OUTCOME_TRY(now, zookeeper_time());
      if (leases->until_ms == INT64_MAX || now < leases->until_ms + margin.count()) {
        out.push_back({node.worker_id, leases->owner.empty() ? node.path : leases->owner,
                       "cut off from ZooKeeper (no session) while its lease may still run"});
        continue;
      }
    }
    if (leases->superseded_until_ms != 0) {
      BOOST_OUTCOME_TRY(now, zookeeper_time());
      if (now < leases->superseded_until_ms + margin.count()) {
        out.push_back(
            {node.worker_id, node.path,
             fmt::format("an owner it superseded may issue until {} (ZooKeeper's time)",
                         format_iso8601_ms(leases->superseded_until_ms + margin.count()))});
      }
    }
  }
  return out;
}

}  // namespace snowflake::migration
