#pragma once
// The root node's data says how the cluster issues IDs: its ID layout, its
// worker-ID strategy and, in a layout with a datacenter field, its
// datacenter ID, written by the first daemon. Daemons with another layout
// could issue the same ID; daemons of another strategy hand out the same
// worker IDs by other rules (a sequential node's number is a pool member's
// ID too); a daemon of another datacenter on this datacenter's pool would
// stamp the other datacenter's field on worker IDs this pool hands out
// again, and the other datacenter's own pool hands them out too. A daemon
// with an opaque key records its fingerprint (forms/opaque_ids.hpp): a
// daemon with another key would hand out another permutation of the same
// tags, whose opaque IDs can meet. Each refuses to start, naming both.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

// Who is asking: what a daemon knows of the cluster, and what it writes
// when it makes the root or finds ours lost.
struct RootIdentity {
  // The cluster ID this daemon's state directory names (it has been part of
  // that cluster), if any.
  std::optional<std::string> known_id{};
  // How long a fence this check writes lasts (fence_length); 0: none is
  // written (a tool that only reads, tests of the fields).
  std::chrono::milliseconds fence_length{0};
  std::string who{};  // "host:port pid N", for a fence's reason
  // `snowflaked cluster create`: a missing root is a new cluster, for sure.
  bool vouched = false;
  ClusterVouch vouch{};  // what a root it makes records (cluster_vouch.hpp)
};

enum class RootOutcome {
  joined,      // the root was there, as this daemon knows it (or it knew none)
  created,     // made now: a new cluster (fenced unless vouched for)
  identified,  // a root from before cluster IDs, given one now
  wiped,       // missing though this daemon knew it: made again, same ID, fenced
  replaced,    // another cluster ID, or none: this daemon's cluster is gone; fenced
};
std::string_view to_string(RootOutcome outcome) noexcept;

struct RootCheck {
  std::string cluster_id;  // the root's, after the check
  RootOutcome outcome = RootOutcome::joined;
  std::optional<ClusterFence> fence{};  // the fence in force after the check
};

// The form policy a root check records and compares (form_policy.hpp).
struct RootForms {
  // Recorded with a root made now (or one without a cluster ID yet: a new
  // cluster). A root of a cluster that runs already gets none added: which
  // replica's config would it be? `snowflaked cluster forms --set` says.
  FormPolicy policy;
  // Compared with what the root records: a daemon's first check (exit 3),
  // cluster create. A daemon's later checks only record (a root made again
  // after a wipe gets the policy last read from the cluster): one that
  // reads a changed policy refuses the tags in dispute (ClusterForms), and
  // a new session does not turn that into an exit.
  bool compare = true;
};

// Stores `layout`, `strategy`, `datacenter_id`, the opaque key's
// fingerprint (if any) and the form policy (if given, as RootForms says) in
// `root` if nobody has yet (a root written before they were recorded gets
// ours added), else compares; gives the root a cluster ID if it has none,
// and fences it as `identity` requires. Errors: layout_mismatch,
// strategy_mismatch, datacenter_mismatch, opaque_key_mismatch,
// form_policy_mismatch (naming both), zookeeper.
Result<RootCheck, CoordError> check_cluster_root(
    ZkSession& zk, const std::string& root, const LayoutSettings& layout, CoordinatorType strategy,
    std::uint32_t datacenter_id = 0, std::string_view opaque_key = {},
    const RootIdentity& identity = {}, const std::optional<RootForms>& forms = std::nullopt);

// What a root's recorded form policy says against `ours`: nothing when it
// records none or the same; else form_policy_mismatch naming both (or what
// is wrong with the record), and how to change the cluster's.
std::optional<CoordError> form_policy_conflict(const std::string& root, std::string_view root_data,
                                               const FormPolicy& ours);

}  // namespace snowflake::coord
