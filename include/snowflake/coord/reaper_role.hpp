#pragma once
// Which recycle daemon reaps: one at a time, so the cluster's cost of
// looking for stale worker IDs does not grow with its square (every daemon
// reading every inuse node at every heartbeat). ZooKeeper's leader-election
// recipe: each daemon's session keeps one ephemeral sequential candidate
//
//   <root>/pool/reapers/<session, hex>-<sequence>
//
// and the session holding the lowest reaps. The others each watch only the
// candidate just below theirs, so a holder's end wakes one daemon, not all.
// Nothing below a candidate can appear later (sequence numbers only grow), so
// a session that saw itself lowest holds the role as long as it lives; its
// end (expiry, crash, close) deletes its candidate and passes the role on.
//
// The role decides who spends the reads, never what is safe: a reclaim is a
// versioned, move-counted multi that needs the owner's alive node gone
// (recycle_pool.hpp), whoever sends it (rule 8 of docs/design.md). A pass is
// made only by the session that holds the role at that moment (model
// property 9: no reading outlives the holding it was taken under).

#include <cstdint>
#include <string>

#include "snowflake/coord/coord_error.hpp"
#include "snowflake/coord/zk_session.hpp"

namespace snowflake::coord {

class ReaperRole {
 public:
  explicit ReaperRole(std::string dir);

  // Whether `zk`'s session holds the role now. Makes the session's candidate
  // if it has none (found by name after a create whose answer was lost, so
  // no candidate of ours is left behind below us), then watches the next
  // lower one. Sends nothing while no watch has fired since the last answer.
  Result<bool, CoordError> held(ZkSession& zk);

  // The watch held() left has fired: the next held() looks again.
  void look_again() noexcept { dirty_ = true; }

  // The session whose candidate was last found lowest; 0: none.
  std::int64_t holder_session() const noexcept { return holder_ ? session_ : 0; }
  const std::string& dir() const noexcept { return dir_; }

 private:
  Result<bool, CoordError> look(ZkSession& zk);

  std::string dir_;
  std::string prefix_;        // "<session hex>-" of session_
  std::int64_t session_ = 0;  // the session the fields below are about
  bool create_sent_ = false;  // a create went out for session_ (its answer may be lost)
  std::string candidate_;     // our candidate's name, once known
  bool holder_ = false;
  bool dirty_ = true;
};

}  // namespace snowflake::coord
