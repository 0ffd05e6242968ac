#include "snowflake/zk/node_change_watch.hpp"

namespace snowflake::coord {

NodeChangeWatch::NodeChangeWatch(std::string path)
    : path_(std::move(path)), armed_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

Result<std::optional<NodeStat>, ZkError> NodeChangeWatch::read(ZkSession& zk) {
  const std::int64_t session = zk.session_id();
  if (watcher_session_ != session) {
    // One watcher per session, for its life: a session's watchers go with it.
    zk.add_node_watcher([armed = armed_, path = path_, session](const std::string& changed) {
      if (changed != path) return;
      std::int64_t expected = session;
      armed->compare_exchange_strong(expected, -session);
    });
    watcher_session_ = session;
  }
  // Armed before the read is sent: an event that fires between the read's
  // answer and this store would otherwise be overwritten (a change taken for
  // none); an older watch firing now only costs a reading more.
  armed_->store(session);
  auto stat = zk.exists(path_, /*watch=*/true);
  if (!stat) armed_->store(0);  // whether a watch was left is not known
  return stat;
}

NodeChangeWatch::Since NodeChangeWatch::since_read(const ZkSession& zk) const {
  const std::int64_t armed = armed_->load();
  const std::int64_t session = zk.session_id();
  if (armed == session && session != 0) return Since::unchanged;
  if (armed == -session && session != 0) return Since::changed;
  return Since::unknown;
}

}  // namespace snowflake::coord
