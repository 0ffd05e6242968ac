// The restore grace for one reader of ZooKeeper (restore_grace.hpp).

#include "snowflake/cluster/restore_grace.hpp"

#include <algorithm>

namespace snowflake::coord {

bool RestoreGrace::holds(ZkSession& zk, BootClock::time_point read_at) {
  if (length_.count() == 0) return false;
  const auto since = zk.connection_answering_since();
  if (!since) return true;
  return read_at < *since + length_ && !vouched(zk);
}

BootClock::duration RestoreGrace::left_known(ZkSession& zk) {
  if (length_.count() == 0) return BootClock::duration::zero();
  const auto now = BootClock::now();
  const auto end = zk.connected_since() + length_;
  if (now >= end || vouched(zk)) return BootClock::duration::zero();
  return end - now;
}

bool RestoreGrace::vouched(ZkSession& zk) {
  if (!zk.on_first_connection()) return false;
  if (vouch_session_ != zk.session_id()) {
    auto root = zk.get(root_);
    if (!root) return false;  // unread: held, judged again at the grace's end
    vouch_ = recorded_vouch(root.value().data);
    vouch_session_ = zk.session_id();
  }
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  return vouch_reaches(vouch_, zk.session_id(), now_ms);
}

}  // namespace snowflake::coord
