#pragma once
// A cluster's ZooKeeper tree: every path of a cluster root is named here and
// nowhere else, so this is also the tree's map. What each node holds:
// node_data.hpp (worker IDs), cluster_root.hpp and migration_floor.hpp (the
// root's own data).
//
//   <root>                              {layout, strategy, datacenter_id, floor}
//   <root>/alive/<id>                   ephemeral: the owner token of worker ID <id>'s
//                                       holder, bound to its session (both strategies)
//   <root>/forever/<host>:<port>-<seq>  sequential: one persistent sequential node per
//                                       host:port, as Leaf's (Leaf's own tree is read there too)
//   <root>/pool                         recycle: {size, complete}
//   <root>/pool/inuse/<id>              recycle: a taken worker ID
//                                       {owner, floor, ts, hwm, lease_ms}
//   <root>/pool/notuse/<id>             recycle: a free worker ID {floor}
//   <root>/pool/init-lock               recycle, ephemeral: held while the pool is filled
//   <root>/pool/clock                   recycle: written to read ZooKeeper's time off its mtime
//   <root>/pool/reapers/<session>-<seq> recycle, ephemeral sequential: a daemon's candidacy for
//                                       the reaper; the lowest reaps (candidate_line.hpp)
//   <root>/pool/claimers/<session>-<seq> recycle, ephemeral sequential: a daemon waiting to
//                                       claim; the lowest claims, then leaves (candidate_line.hpp)
//   <root>/sequences/<tag>              a dense sequence: {next, step, floor, takes, frozen}
//                                       (sequence_node.hpp); takes write only this
//   <root>/sequences/<tag>/floor        its floor child, {floor, frozen}: written with the
//                                       node in one multi by create, raise and freeze only;
//                                       holders watch it (sequence_supplier.hpp)
//   <root>/sequence_owners/<tag>     a strict sequence's owner {worker_id, node, token,
//                                       address, released}, made with it (strict_owner.hpp)
//   <root>/lease_pools/<name>           a named pool of worker IDs for holders we do not run
//                                       {worker_bits} (lease_pool.hpp); under it pool/ as the
//                                       recycle pool's (inuse, notuse, clock, init-lock)
//   <root>/floor_acks/<session, hex>    ephemeral: a daemon's confirmation of the migration floor
//   <root>/status-probe-<pid>-<random>  ephemeral, deleted at once: ZooKeeper's time for a
//                                       reader that writes nothing else (pool status, pool floor)

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace snowflake::coord::tree {

inline std::string alive_dir(const std::string& root) { return root + "/alive"; }
inline std::string forever_dir(const std::string& root) { return root + "/forever"; }
inline std::string pool(const std::string& root) { return root + "/pool"; }
inline std::string inuse_dir(const std::string& root) { return pool(root) + "/inuse"; }
inline std::string notuse_dir(const std::string& root) { return pool(root) + "/notuse"; }
inline std::string pool_init_lock(const std::string& root) { return pool(root) + "/init-lock"; }
inline std::string pool_clock(const std::string& root) { return pool(root) + "/clock"; }
inline std::string pool_reapers(const std::string& root) { return pool(root) + "/reapers"; }
inline std::string pool_claimers(const std::string& root) { return pool(root) + "/claimers"; }
inline std::string floor_acks_dir(const std::string& root) { return root + "/floor_acks"; }
inline std::string lease_pools_dir(const std::string& root) { return root + "/lease_pools"; }
inline std::string lease_pool(const std::string& root, const std::string& name) {
  return lease_pools_dir(root) + "/" + name;
}
inline std::string sequences_dir(const std::string& root) { return root + "/sequences"; }
inline std::string sequence_holders_dir(const std::string& root) {
  return root + "/sequence_holders";
}

// A child of one of the directories above: "<dir>/<name>".
inline std::string child(const std::string& dir, const std::string& name) {
  return dir + "/" + name;
}
inline std::string worker_node(const std::string& dir, std::uint32_t worker_id) {
  return child(dir, std::to_string(worker_id));
}
// A sequence's node, and its floor child.
inline std::string sequence_node(const std::string& root, const std::string& tag) {
  return child(sequences_dir(root), tag);
}
inline constexpr std::string_view kSequenceFloorName = "floor";
inline std::string sequence_floor(const std::string& root, const std::string& tag) {
  return child(sequence_node(root, tag), std::string(kSequenceFloorName));
}
// The strict sequences, each with its owner record (strict_owner.hpp).
inline std::string sequence_owners_dir(const std::string& root) {
  return root + "/sequence_owners";
}
inline std::string sequence_owner(const std::string& root, const std::string& tag) {
  return child(sequence_owners_dir(root), tag);
}
// The tag whose node or floor child `path` is (a watch's path); nullopt for
// any other path, sequences_dir itself included.
inline std::optional<std::string> sequence_tag_of(const std::string& root, std::string_view path) {
  const std::string dir = sequences_dir(root) + "/";
  if (!path.starts_with(dir)) return std::nullopt;
  path.remove_prefix(dir.size());
  const auto slash = path.find('/');
  if (slash == std::string_view::npos)
    return path.empty() ? std::nullopt : std::optional<std::string>(path);
  if (slash == 0 || path.substr(slash + 1) != kSequenceFloorName) return std::nullopt;
  return std::string(path.substr(0, slash));
}
inline std::string floor_ack(const std::string& root, std::int64_t session) {
  return fmt::format("{}/{:016x}", floor_acks_dir(root), static_cast<std::uint64_t>(session));
}
// Where ZkSession::time_of_probe makes its node: "<root>/status-probe-<pid>-<random>".
inline std::string time_probe_prefix(const std::string& root) { return root + "/status-probe-"; }

}  // namespace snowflake::coord::tree
