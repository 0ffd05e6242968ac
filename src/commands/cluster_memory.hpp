#pragma once
// What `snowflaked cluster create` knows of the cluster from the config's
// state directory (<state_dir>/cluster.json, state/cluster_file.hpp), and
// what it leaves there.
//
// A daemon records the cluster it is part of there; so does create, in the
// state directory it runs with (the compose file's one-shot keeps it on a
// volume of its own). Run again after ZooKeeper lost the cluster (the
// one-shot runs on every `up`), create refuses: a cluster made again there
// and vouched for would let a fresh daemon claim at once a worker ID a
// daemon that lived through the loss still issues with.

#include <optional>
#include <string>

#include "snowflake/commands/common.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::commands {

// Why create must refuse (the message; exit 3): the state directory names a
// cluster at the config's root that ZooKeeper no longer has there (no root,
// or another cluster's). nullopt: go on. An error reading the root: the
// message with exit 1 in `failure`.
struct MemoryVerdict {
  std::optional<std::string> conflict;
  std::optional<std::string> failure;
};
MemoryVerdict judge_by_memory(coord::ZkSession& zk, const Config& config);

// The cluster ID the state directory records at the config's root, if any;
// an error (exit 1) if there may be a record this command cannot read.
Result<std::optional<std::string>, std::string> remembered_cluster_id(const Config& config);

// Records `cluster_id` in the state directory, if the directory exists and
// names no cluster yet (a daemon's record is left as it is). What was done,
// for the command's output: "" when nothing was, or a warning on failure.
struct Recorded {
  std::string said;     // stdout: where it was recorded
  std::string warning;  // stderr: could not record
};
Recorded remember_cluster(const Config& config, const std::string& cluster_id);

}  // namespace snowflake::commands
