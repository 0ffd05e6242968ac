#include "cluster_memory.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "snowflake/base/error_text.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/state/cluster_file.hpp"

namespace snowflake::commands {

namespace {

std::string record_path(const std::string& dir) { return dir + "/cluster.json"; }

// The record in `dir`, if any; an error if there may be one this command
// cannot read (it must not vouch for a cluster it cannot rule out).
Result<std::optional<state::ClusterRecord>, std::string> read_record(const std::string& dir) {
  const std::string path = record_path(dir);
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::optional<state::ClusterRecord>{};
    return fmt::format("cannot read {}: {} (run it as the daemon's user, or root)", path,
                       error_text(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto record = state::decode_cluster_record(text.str());
  if (!record) {
    return fmt::format("{} is not a cluster record (edited?): put it right or remove it", path);
  }
  return std::optional<state::ClusterRecord>{std::move(*record)};
}

}  // namespace

MemoryVerdict judge_by_memory(coord::ZkSession& zk, const Config& config) {
  const std::string& root = config.zookeeper.root;
  const std::string dir = state_dir_of(config);
  auto record = read_record(dir);
  if (!record) return {std::nullopt, record.error()};
  if (!record.value() || record.value()->root != root) return {};
  const std::optional<std::string> known = record.value()->cluster_id;
  auto there = zk.try_get(root);
  if (!there) return {std::nullopt, "cannot read the root: " + there.error().message()};
  const auto found = there.value() ? coord::recorded_cluster_id(there.value()->data) : std::nullopt;
  if (found == known) return {};
  std::string what = "ZooKeeper no longer has it";
  if (there.value()) {
    what = found ? "ZooKeeper has the cluster " + *found + " there"
                 : std::string("ZooKeeper has a root without a cluster ID there");
  }
  return {fmt::format("the cluster {} ran at {} ({} says so), and {}: it is not new. "
                      "Never vouch for it (docs/operations.md, \"ZooKeeper lost or restored its "
                      "data\"); a daemon started with this state directory fences the cluster. "
                      "Only if that cluster is gone for good (a test's, a dismantled install) and "
                      "its IDs are no longer in use: remove {} and run this again",
                      *known, root, record_path(dir), what, record_path(dir)),
          std::nullopt};
}

Result<std::optional<std::string>, std::string> remembered_cluster_id(const Config& config) {
  auto record = read_record(state_dir_of(config));
  if (!record) return outcome::failure(record.error());
  if (!record.value() || record.value()->root != config.zookeeper.root) {
    return outcome::success(std::optional<std::string>{});
  }
  return outcome::success(std::optional<std::string>{record.value()->cluster_id});
}

Recorded remember_cluster(const Config& config, const std::string& cluster_id) {
  const std::string dir = state_dir_of(config);
  struct stat st {};
  // No directory: nothing here to remember with (a daemon records the
  // cluster where it runs); one that names a cluster is a daemon's.
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return {fmt::format("not recorded: no state directory {} here (a daemon records the cluster "
                        "where it runs)",
                        dir),
            {}};
  }
  if (const auto other = state::load_cluster_record(dir)) {
    if (other->root == config.zookeeper.root) return {};  // ours, or its daemon's: the same
    return {{},
            fmt::format("not recorded: {} names the cluster at {}, which it keeps",
                        record_path(dir), other->root)};
  }
  if (auto saved = state::save_cluster_id(dir, config.zookeeper.root, cluster_id); !saved) {
    ::unlink((record_path(dir) + ".tmp").c_str());  // none of ours left where the daemon writes
    return {{},
            fmt::format("could not record the cluster in {}: {}; run again after ZooKeeper lost "
                        "it, this command could not tell it is not new",
                        dir, saved.error())};
  }
  // Root in a daemon's directory (systemd's DynamicUser=, a volume): the
  // record its owner's, so the daemon reads it and may replace it.
  const std::string path = record_path(dir);
  if (::geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0) &&
      ::chown(path.c_str(), st.st_uid, st.st_gid) != 0) {
    return {{},
            fmt::format("recorded the cluster in {}, but could not give it to the "
                        "directory's owner (uid {})",
                        path, st.st_uid)};
  }
  return {fmt::format("recorded in {}: run again after ZooKeeper lost the cluster, this command "
                      "refuses it (exit 3)",
                      path),
          {}};
}

}  // namespace snowflake::commands
