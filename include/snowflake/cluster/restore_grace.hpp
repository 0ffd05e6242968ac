#pragma once
// The restore grace (coordinator.restore_grace_ms; docs/design.md, "A
// restore, and the grace"), judged for one reader of ZooKeeper: what a
// connection younger than the grace answered is not used until the
// connection is that old and the cluster's records have been read again,
// so that a restored ZooKeeper's fence and freeze (cluster fence, or a
// daemon that lived through it) land first. Cluster create's vouch spares
// it (cluster_vouch.hpp). One thread's: the vouch read is cached per
// session.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/base/clock.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

class RestoreGrace {
 public:
  RestoreGrace(std::chrono::milliseconds length, std::string root)
      : length_(length), root_(std::move(root)) {}

  // Whether what `zk` answered at `read_at` waits for the grace: read over
  // a connection younger than it (or none answering yet), and not spared by
  // a vouch of this ZooKeeper run. Reads the root (once per session) only
  // while the connection is young.
  bool holds(ZkSession& zk, BootClock::time_point read_at);
  // How long what is read now waits, as far as the connection events
  // delivered so far tell (no round trip: holds() after the reads decides):
  // zero once the grace is over or spared.
  BootClock::duration left_known(ZkSession& zk);

 private:
  bool vouched(ZkSession& zk);

  std::chrono::milliseconds length_;
  std::string root_;
  std::optional<ClusterVouch> vouch_;  // the root's, read over session vouch_session_
  std::int64_t vouch_session_ = 0;
};

}  // namespace snowflake::coord
