#pragma once
// Whether a node has changed since this process last read it in a session,
// as a ZooKeeper watch left by that reading tells. The pool's move count
// (the version of inuse/) uses it: a heartbeat sends its write checked
// against the count remembered from its last answered write, and a move
// elsewhere since gets that write refused; a heartbeat that knows of the
// move reads the count first instead. So a move refuses no running daemon's
// heartbeat unless it lands between that heartbeat's reading and its write
// (a fleet stopping at once moves every second or so: every heartbeat was
// refused at least once then, some twice). Only a hint: every write still
// checks the count it sends, so a late or lost watch event costs a refused
// write, never a wrong one.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

class NodeChangeWatch {
 public:
  explicit NodeChangeWatch(std::string path);

  // The node's stat, read now, leaving a watch on it (nullopt: no node).
  Result<std::optional<NodeStat>, ZkError> read(ZkSession& zk);

  enum class Since : std::uint8_t {
    unchanged,  // read in this session, and no event since
    changed,    // read in this session, and the watch has fired since
    unknown,    // not read in this session (a new session has no watch)
  };
  // What the watch says of the node since the last read() in zk's session.
  Since since_read(const ZkSession& zk) const;

 private:
  std::string path_;
  // The session whose reading left the watch: its id while the watch has
  // not fired, minus its id once it has; 0 before any reading. Shared with
  // the watcher, which the session may call after we are gone.
  std::shared_ptr<std::atomic<std::int64_t>> armed_;
  std::int64_t watcher_session_ = 0;  // the session our watcher was added to
};

}  // namespace snowflake::coord
