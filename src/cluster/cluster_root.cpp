#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>

#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/zk/cluster_tree.hpp"
#include "snowflake/zk/node_data.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

std::string describe(const LayoutSettings& l) {
  std::string out = fmt::format("time_bits {}, ", l.time_bits);
  if (l.datacenter_bits != 0) out += fmt::format("datacenter_bits {}, ", l.datacenter_bits);
  out += fmt::format("worker_bits {}, sequence_bits {}, time_unit_ms {}, epoch_ms {}",
                     l.worker_bits, l.sequence_bits, l.time_unit_ms, l.epoch_ms);
  if (l.order != FieldOrder::sequence_low) out += fmt::format(", order {}", to_string(l.order));
  return out;
}

std::string encode_root(const LayoutSettings& layout, CoordinatorType strategy,
                        std::uint32_t datacenter_id, std::string_view opaque_key) {
  json j = json::parse(encode_layout(layout));
  j["strategy"] = to_string(strategy);
  if (layout.datacenter_bits != 0) j["datacenter_id"] = datacenter_id;
  if (!opaque_key.empty()) j["opaque_key"] = opaque_key;
  return j.dump();
}

// The opaque key's fingerprint a root records, or "".
std::string opaque_key_of(const json& j) {
  const auto it = j.find("opaque_key");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The strategy a root records; "" for a root written before they were.
std::string strategy_of(const json& j) {
  const auto it = j.find("strategy");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The datacenter ID a root records, if it records one.
std::optional<std::int64_t> datacenter_of(const json& j) {
  const auto it = j.find("datacenter_id");
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

// A root Leaf made (`/snowflake/<leaf.name>`, ours being `/snowflake/<service>`)
// holds Leaf's worker nodes in forever/: taking it over would hand out Leaf's
// worker IDs beside Leaf. The first such node, named, or nothing.
Result<void, CoordError> refuse_leaf_nodes(ZkSession& zk, const std::string& root) {
  const std::string forever = tree::forever_dir(root);
  BOOST_OUTCOME_TRY(names, zk.try_children(forever));
  if (!names) return outcome::success();
  for (const auto& name : names.value()) {
    BOOST_OUTCOME_TRY(node, zk.try_get(tree::child(forever, name)));
    if (!node || !is_leaf_node_data(node.value().data)) continue;
    return CoordError{CoordErrc::foreign_root,
                      fmt::format("{} holds Meituan Leaf's worker nodes ({}/{} holds {}): it is a "
                                  "Leaf cluster's root, and sharing it would share worker IDs "
                                  "with Leaf. Give this daemon another service or zookeeper.root "
                                  "(pool floor --from-leaf {} reads Leaf's nodes from there)",
                                  root, forever, name, node.value().data, root)};
  }
  return outcome::success();
}

// What the root records that contradicts this daemon's config, if anything:
// another layout, datacenter, opaque key or strategy. A field not recorded
// yet contradicts nothing (the caller records ours).
std::optional<CoordError> contradiction(const std::string& root, const std::string& data,
                                        const json& fields, const LayoutSettings& layout,
                                        CoordinatorType strategy, std::uint32_t datacenter_id,
                                        std::string_view opaque_key) {
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
  const auto recorded_datacenter = datacenter_of(fields);
  if (layout.datacenter_bits != 0 && recorded_datacenter && *recorded_datacenter != datacenter_id) {
    return CoordError{CoordErrc::datacenter_mismatch,
                      fmt::format("the cluster at {} belongs to datacenter {}; this daemon's "
                                  "coordinator.datacenter_id is {}. Each datacenter has a "
                                  "ZooKeeper root (and pool) of its own: point this daemon at "
                                  "its datacenter's zookeeper.root, or fix its datacenter_id",
                                  root, *recorded_datacenter, datacenter_id)};
  }
  const std::string recorded_key = opaque_key_of(fields);
  if (!opaque_key.empty() && !recorded_key.empty() && recorded_key != opaque_key) {
    return CoordError{CoordErrc::opaque_key_mismatch,
                      fmt::format("the cluster at {} makes its opaque IDs with another key "
                                  "(fingerprint {}); this daemon's forms.opaque_key_file holds "
                                  "one of fingerprint {}. Two keys hand out two permutations "
                                  "of one tag, which can meet: give every daemon of the "
                                  "cluster the same key",
                                  root, recorded_key, opaque_key)};
  }
  const std::string recorded = strategy_of(fields);
  if (!recorded.empty() && recorded != to_string(strategy)) {
    return CoordError{CoordErrc::strategy_mismatch,
                      fmt::format("the cluster at {} hands out worker IDs by the \"{}\" "
                                  "strategy; this daemon's coordinator.type is \"{}\". Two "
                                  "strategies on one root give out the same worker IDs: use "
                                  "the cluster's strategy or another zookeeper.root",
                                  root, recorded, strategy)};
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(CoordErrc code) noexcept {
  switch (code) {
    case CoordErrc::zookeeper:
      return "zookeeper";
    case CoordErrc::layout_mismatch:
      return "layout_mismatch";
    case CoordErrc::strategy_mismatch:
      return "strategy_mismatch";
    case CoordErrc::datacenter_mismatch:
      return "datacenter_mismatch";
    case CoordErrc::foreign_root:
      return "foreign_root";
    case CoordErrc::opaque_key_mismatch:
      return "opaque_key_mismatch";
    case CoordErrc::form_policy_mismatch:
      return "form_policy_mismatch";
    case CoordErrc::workers_exhausted:
      return "workers_exhausted";
    case CoordErrc::pool_exhausted:
      return "pool_exhausted";
    case CoordErrc::floors_ahead:
      return "floors_ahead";
    case CoordErrc::held:
      return "held";
    case CoordErrc::in_line:
      return "in_line";
    case CoordErrc::unusable:
      return "unusable";
    case CoordErrc::lost:
      return "lost";
    case CoordErrc::vanished:
      return "vanished";
    case CoordErrc::clock:
      return "clock";
    case CoordErrc::no_sequence:
      return "no_sequence";
    case CoordErrc::sequence_exists:
      return "sequence_exists";
    case CoordErrc::frozen:
      return "frozen";
    case CoordErrc::sequence_exhausted:
      return "sequence_exhausted";
    case CoordErrc::history_lost:
      return "history_lost";
    case CoordErrc::periodic:
      return "periodic";
    case CoordErrc::strict:
      return "strict";
    case CoordErrc::no_pool:
      return "no_pool";
    case CoordErrc::no_lease:
      return "no_lease";
  }
  return "unknown";
}

namespace {

// The root's data as read, with what this daemon records merged in (the
// fields it found already agree: contradiction() passed).
std::string merged(const json& fields, const std::string& mine) {
  json record = fields;
  const json ours = json::parse(mine);
  for (const auto& [key, value] : ours.items()) record[key] = value;
  return record.dump();
}

std::string describe_who(const RootIdentity& identity) {
  return identity.who.empty() ? std::string("a snowflaked") : identity.who;
}

// The fence a root made now gets: none if vouched for (or no length given).
Result<std::optional<ClusterFence>, CoordError> fence_for_new_root(ZkSession& zk,
                                                                   const std::string& root,
                                                                   const RootIdentity& identity,
                                                                   FenceKind kind,
                                                                   const std::string& reason) {
  if (identity.vouched || identity.fence_length.count() <= 0) return std::optional<ClusterFence>();
  BOOST_OUTCOME_TRY(now, zookeeper_now(zk, root));
  return std::optional(fence_from({kind, identity.fence_length, reason}, now));
}

// Whether this daemon knows the cluster (its state directory), and does not
// vouch that it is new.
bool knows_cluster(const RootIdentity& identity) {
  return identity.known_id.has_value() && !identity.vouched;
}

// No root. This daemon knows the cluster: ZooKeeper lost it (wiped), and it
// comes back under the same ID, fenced. Otherwise a new cluster, fenced
// unless vouched for: a wipe leaves an empty ensemble too, and only a
// daemon that knew the cluster can tell. nullopt: made by someone else
// meanwhile (or by our own lost create).
Result<std::optional<RootCheck>, CoordError> make_root(ZkSession& zk, const std::string& root,
                                                       const std::string& mine,
                                                       const RootIdentity& identity) {
  const bool knows = knows_cluster(identity);
  RootCheck check{knows ? *identity.known_id : new_cluster_id(),
                  knows ? RootOutcome::wiped : RootOutcome::created, std::nullopt};
  const std::string reason =
      knows
          ? fmt::format("ZooKeeper lost the cluster: its root was missing when {} came back to it",
                        describe_who(identity))
          : fmt::format(
                "a new cluster, made by {}: nothing proved that no earlier cluster ran on this "
                "root (snowflaked cluster create vouches that it is new)",
                describe_who(identity));
  BOOST_OUTCOME_TRY(
      fence, fence_for_new_root(zk, root, identity,
                                knows ? FenceKind::history_lost : FenceKind::new_cluster, reason));
  std::string record = with_cluster_id(mine, check.cluster_id);
  if (fence) record = with_fence(record, *fence);
  // A new cluster made in this ZooKeeper run: cluster create's word, given
  // now or (lifting the fence) later, spares its daemons the restore grace
  // while the run lasts (cluster_vouch.hpp).
  if (identity.vouched) {
    record = with_vouch(record, identity.vouch);
  } else if (!knows) {
    record = with_maker_session(record, zk.session_id());
  }
  auto created = zk.create(root, record);
  if (!created) {
    if (created.error().code == ZkErrc::node_exists || created.error().outcome_unknown())
      return std::optional<RootCheck>();
    return CoordError::from(created.error());
  }
  check.fence = fence;
  return std::optional(std::move(check));
}

// Who the root found says the cluster is, against what this daemon knows,
// and the fence to add to it, if any.
Result<std::pair<RootCheck, std::optional<ClusterFence>>, CoordError> identify(
    ZkSession& zk, const std::string& root, const std::string& data, const RootIdentity& identity) {
  const auto recorded_id = recorded_cluster_id(data);
  RootCheck check{recorded_id.value_or(std::string()), RootOutcome::joined, recorded_fence(data)};
  std::optional<ClusterFence> fence_to_add;
  if (knows_cluster(identity) && recorded_id != identity.known_id) {
    // Made again under us: by a daemon that did not know the cluster, an
    // operator, or a version before cluster IDs. Whatever it is now, what
    // we and the other daemons of our cluster issued is not in it.
    check.outcome = RootOutcome::replaced;
    if (!recorded_id) check.cluster_id = *identity.known_id;
    BOOST_OUTCOME_TRY(
        fence, fence_for_new_root(
                   zk, root, identity, FenceKind::history_lost,
                   fmt::format("ZooKeeper lost the cluster {}: its root held {} when {} came "
                               "back to it",
                               *identity.known_id,
                               recorded_id ? "cluster " + *recorded_id : "no cluster ID",
                               describe_who(identity))));
    fence_to_add = fence;
  } else if (!recorded_id) {
    // A root without an ID: a cluster made by 0.4.0 or earlier, which gets one
    // now; or an empty node (an operator's, or a deeper root's parent),
    // which becomes a new cluster here.
    check.cluster_id = new_cluster_id();
    if (data.empty()) {
      check.outcome = RootOutcome::created;
      BOOST_OUTCOME_TRY(
          fence,
          fence_for_new_root(zk, root, identity, FenceKind::new_cluster,
                             fmt::format("a new cluster, made by {} on an empty root: nothing "
                                         "proved that no earlier cluster ran there "
                                         "(snowflaked cluster create vouches that it is new)",
                                         describe_who(identity))));
      fence_to_add = fence;
    } else {
      check.outcome = RootOutcome::identified;
    }
  }
  return std::pair(std::move(check), fence_to_add);
}

}  // namespace

std::string_view to_string(RootOutcome outcome) noexcept {
  switch (outcome) {
    case RootOutcome::joined:
      return "joined";
    case RootOutcome::created:
      return "created";
    case RootOutcome::identified:
      return "identified";
    case RootOutcome::wiped:
      return "wiped";
    case RootOutcome::replaced:
      return "replaced";
  }
  return "joined";
}

std::optional<CoordError> form_policy_conflict(const std::string& root, std::string_view root_data,
                                               const FormPolicy& ours) {
  const auto recorded = recorded_form_policy(root_data);
  if (!recorded) {
    return CoordError{
        CoordErrc::form_policy_mismatch,
        fmt::format("{} ({}): fix it with snowflaked cluster forms --set", root, recorded.error())};
  }
  if (!recorded.value() || *recorded.value() == ours) return std::nullopt;
  return CoordError{CoordErrc::form_policy_mismatch,
                    fmt::format("the cluster at {} hands IDs out by the form policy ({}); this "
                                "daemon's forms section says ({}). A replica with other forms "
                                "would hand a tag out in a form the cluster keeps it from: give "
                                "it the cluster's forms.default and forms.tags, or change the "
                                "cluster's with snowflaked cluster forms --set",
                                root, describe(*recorded.value()), describe(ours))};
}

Result<RootCheck, CoordError> check_cluster_root(
    ZkSession& zk, const std::string& root, const LayoutSettings& layout, CoordinatorType strategy,
    std::uint32_t datacenter_id, std::string_view opaque_key, const RootIdentity& identity,
    const std::optional<RootForms>& forms) {
  const std::string mine = encode_root(layout, strategy, datacenter_id, opaque_key);
  if (const auto slash = root.rfind('/'); slash > 0) {
    BOOST_OUTCOME_TRY(zk.ensure_path(root.substr(0, slash)));
  }
  // Bounded: each round either settles or saw another writer win a race.
  for (int attempt = 0; attempt < 5; ++attempt) {
    BOOST_OUTCOME_TRY(found, zk.try_get(root));
    if (!found) {
      BOOST_OUTCOME_TRY(
          made,
          make_root(zk, root, forms ? with_form_policy(mine, forms->policy) : mine, identity));
      if (made) return std::move(*made);
      continue;  // made by someone else meanwhile (or by our own lost create): read it
    }
    const std::string& data = found.value().data;
    const json recorded_root = json::parse(data, nullptr, false);
    const json fields = recorded_root.is_object() ? recorded_root : json::object();
    // Leaf writes no data on its root; ours always records a strategy. A
    // sequential cluster reads forever/ at every claim, so its root is
    // checked every time (a root taken over before this check existed too).
    if (strategy_of(fields).empty() || strategy == CoordinatorType::sequential) {
      BOOST_OUTCOME_TRY(refuse_leaf_nodes(zk, root));
    }
    if (auto conflict =
            contradiction(root, data, fields, layout, strategy, datacenter_id, opaque_key)) {
      return std::move(*conflict);
    }
    if (forms && forms->compare) {
      if (auto conflict = form_policy_conflict(root, data, forms->policy))
        return std::move(*conflict);
    }
    BOOST_OUTCOME_TRY(identified, identify(zk, root, data, identity));
    auto& [check, fence_to_add] = identified;
    const bool recorded_id = recorded_cluster_id(data).has_value();
    const bool datacenter_recorded = layout.datacenter_bits == 0 || datacenter_of(fields);
    const bool key_recorded = opaque_key.empty() || !opaque_key_of(fields).empty();
    // A new cluster's (no ID yet) gets ours; one that runs already, none.
    const bool add_forms = forms && !recorded_id && !fields.contains("forms");
    if (strategy_of(fields) == to_string(strategy) && datacenter_recorded && key_recorded &&
        recorded_id && !fence_to_add) {
      return check;
    }
    // Created empty, written before strategies (or datacenters, keys, IDs)
    // were recorded, or to be fenced: record ours unless someone else writes
    // first, keeping whatever else it holds (a migration floor, a key).
    std::string record = with_cluster_id(merged(fields, mine), check.cluster_id);
    if (add_forms) record = with_form_policy(record, forms->policy);
    if (fence_to_add) {
      check.fence = check.fence ? combined(*check.fence, *fence_to_add) : *fence_to_add;
      record = with_fence(record, *check.fence);
    }
    auto claimed = zk.set(root, record, found.value().stat.version);
    if (claimed) return check;
    if (claimed.error().code == ZkErrc::bad_version || claimed.error().code == ZkErrc::no_node ||
        claimed.error().outcome_unknown())
      continue;
    return CoordError::from(claimed.error());
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing while being read", root)};
}

}  // namespace snowflake::coord
