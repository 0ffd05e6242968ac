#include "snowflake/cluster/cluster_fence.hpp"

#include <fmt/format.h>

#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

constexpr int kMaxAttempts = 16;  // lost races before giving up for now

std::string parent_of(const std::string& root) {
  const auto slash = root.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string() : root.substr(0, slash);
}

}  // namespace

Result<std::int64_t, CoordError> zookeeper_now(ZkSession& zk, const std::string& root) {
  BOOST_OUTCOME_TRY(root_there, zk.exists(root));
  const std::string dir = root_there ? root : parent_of(root);
  BOOST_OUTCOME_TRY(now, zk.time_of_probe(tree::time_probe_prefix(dir)));
  if (!now) {
    return CoordError{CoordErrc::zookeeper,
                      fmt::format("cannot read ZooKeeper's time: this client may not create a "
                                  "probe node under {}",
                                  dir.empty() ? std::string("/") : dir)};
  }
  return *now;
}

ClusterFence fence_from(const FenceRequest& request, std::int64_t now_ms) {
  return ClusterFence{now_ms + request.length.count(), request.kind, now_ms, request.reason};
}

Result<ClusterFence, CoordError> raise_fence(ZkSession& zk, const std::string& root,
                                             const FenceRequest& request) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(now, zookeeper_now(zk, root));
    BOOST_OUTCOME_TRY(node, zk.try_get(root));
    if (!node) {
      return CoordError{CoordErrc::zookeeper, fmt::format("{} does not exist", root)};
    }
    const ClusterFence wanted = fence_from(request, now);
    const auto recorded = recorded_fence(node.value().data);
    const ClusterFence fence = recorded ? combined(*recorded, wanted) : wanted;
    if (recorded && fence == *recorded) return fence;  // it covers us already
    if (node.value().stat.version == -1) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("{}'s version came round to -1 (any version)", root)};
    }
    auto set = zk.set(root, with_fence(node.value().data, fence), node.value().stat.version);
    if (set) return fence;
    if (set.error().code != ZkErrc::bad_version && !set.error().outcome_unknown()) {
      return CoordError::from(set.error());
    }
    // Raced, or the answer was lost: read again (a fence written twice is one fence).
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("{} kept changing while the fence was raised", root)};
}

Result<Lifted, CoordError> lift_new_cluster_fence(ZkSession& zk, const std::string& root,
                                                  const ClusterVouch& vouch) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(node, zk.get(root));
    const auto fence = recorded_fence(node.data);
    if (!fence) return Lifted::none;
    if (fence->kind == FenceKind::history_lost) {
      return CoordError{
          CoordErrc::history_lost,
          fmt::format("the cluster at {} is not new: it is fenced until {} because ZooKeeper "
                      "lost some of its history ({}); cluster create never lifts that "
                      "(docs/operations.md, \"ZooKeeper lost or restored its data\")",
                      root, format_iso8601_ms(fence->until_ms), fence->reason)};
    }
    // Made in this run: nothing under it is older than this run, so no
    // restore can have put it there.
    const auto maker = recorded_maker_session(node.data);
    const bool vouched = maker && vouch_covers_run(vouch, *maker);
    std::string data = without_fence(node.data);
    if (vouched) data = with_vouch(data, vouch);
    auto set = zk.set(root, data, node.stat.version);
    if (set) return vouched ? Lifted::lifted_and_vouched : Lifted::lifted;
    if (set.error().code != ZkErrc::bad_version && !set.error().outcome_unknown()) {
      return CoordError::from(set.error());
    }
  }
  return CoordError{CoordErrc::zookeeper, fmt::format("{} kept changing", root)};
}

}  // namespace snowflake::coord
