#pragma once
// <state_dir>/cluster.json: the cluster this daemon has been part of, by
// its ID (cluster/cluster_identity.hpp) and root:
//
//   {"root": "/snowflake/orders", "cluster_id": "<32 hex digits>"}
//
// ZooKeeper can lose the cluster (a wipe, a restore of an older copy); this
// file is how a daemon that lived through it knows it existed, and so never
// lets it be made anew without a fence (cluster/cluster_history.hpp). A copy of
// the directory knows it too, which is right: the cluster did exist.

#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"

namespace snowflake::state {

struct ClusterRecord {
  std::string root;
  std::string cluster_id;
  bool operator==(const ClusterRecord&) const = default;
};
// The file's text: nullopt if it is not a record (fields missing, an ID of
// another shape: a file someone edited).
std::optional<ClusterRecord> decode_cluster_record(std::string_view text);
std::string encode_cluster_record(const ClusterRecord& record);

// The file's record, whatever root it names; nullopt if there is none or it
// cannot be read.
std::optional<ClusterRecord> load_cluster_record(const std::string& dir);
// The cluster ID the file names for `root`; nullopt if there is no file, it
// names another root, or it cannot be read (it is only ever a witness).
std::optional<std::string> load_cluster_id(const std::string& dir, const std::string& root);
Result<void, std::string> save_cluster_id(const std::string& dir, const std::string& root,
                                          const std::string& cluster_id);

}  // namespace snowflake::state
