#pragma once
// Errors of the worker-ID strategies: what went wrong, in words an operator
// can act on, and whether retrying can help.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

enum class CoordErrc {
  zookeeper,             // a ZooKeeper call failed (see zk); retry later
  layout_mismatch,       // the cluster's ID layout differs from ours: never retry
  strategy_mismatch,     // the cluster's worker-ID strategy differs from ours: never retry
  datacenter_mismatch,   // the cluster belongs to another datacenter: never retry
  foreign_root,          // the root holds another system's nodes (Leaf's): never retry
  opaque_key_mismatch,   // the cluster's opaque IDs are made with another key: never retry
  form_policy_mismatch,  // the cluster hands tags out in other forms (cluster/form_policy.hpp)
  workers_exhausted,     // sequential: the node's number is past the layout's workers
  pool_exhausted,        // recycle: every worker ID is in use; retry later
  floors_ahead,  // every worker ID within reach has a floor too far ahead of the clock; retry
  held,          // another live session holds the worker ID (its alive node); retry
  in_line,       // other daemons claim first (the claimers' line): retry when woken
  unusable,      // a node's data cannot be read, so its floor is unknown: never use it
  lost,          // our node is gone or was changed by someone else
  // Our node is gone, or another's, where no rule lets anyone take it while
  // our lease runs: within the lease, ZooKeeper lost what it acknowledged.
  vanished,
  clock,               // the wall clock cannot be trusted against the floor or ZooKeeper
  no_sequence,         // no sequence of that tag (seq create makes one)
  sequence_exists,     // seq create: a sequence of that tag exists
  frozen,              // the sequence is frozen (its history is in doubt): seq raise first
  sequence_exhausted,  // the sequence has no number left below kSequenceMax (or was retired)
  history_lost,        // cluster create: the cluster's history was lost here, it is not new
  periodic,  // a sequence that restarts each period: its numbers are in its periods' nodes
  strict,    // a strict sequence, and this daemon not its owner: its owner hands out
  no_pool,   // no named lease pool of that name, and none may be made (leases.new_pools)
  no_lease,  // a CosId machine: its instance holds no lease in that pool
};

std::string_view to_string(CoordErrc code) noexcept;

struct CoordError {
  CoordErrc code = CoordErrc::zookeeper;
  std::string message;
  std::optional<ZkError> zk;

  CoordError() = default;  // Boost.Outcome's result needs it
  CoordError(CoordErrc what, std::string text, std::optional<ZkError> cause = std::nullopt)
      : code(what), message(std::move(text)), zk(std::move(cause)) {}
  // A failed ZooKeeper call is one of ours: implicit, so that BOOST_OUTCOME_TRY
  // passes a ZkSession call's error on from a function that returns ours.
  CoordError(const ZkError& e)  // NOLINT(google-explicit-constructor)
      : CoordError(CoordErrc::zookeeper, e.message(), e) {}
  static CoordError from(const ZkError& e) { return e; }
  // Retrying cannot help: the daemon must not start.
  bool fatal() const noexcept {
    return code == CoordErrc::layout_mismatch || code == CoordErrc::strategy_mismatch ||
           code == CoordErrc::datacenter_mismatch || code == CoordErrc::foreign_root ||
           code == CoordErrc::opaque_key_mismatch || code == CoordErrc::form_policy_mismatch ||
           code == CoordErrc::workers_exhausted || code == CoordErrc::clock;
  }
  // Fatal, and no restart can cure it: the config conflicts with the
  // cluster's root (or the root is another system's), or a sequential
  // cluster has used up its worker IDs. The daemon exits 3, which its
  // supervisors do not restart. A clock behind at boot may be cured (exit 1).
  bool permanent() const noexcept { return fatal() && code != CoordErrc::clock; }
};

}  // namespace snowflake::coord
