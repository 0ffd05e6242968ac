#pragma once
// A line of daemons' sessions in ZooKeeper, whose first holds a turn:
// ZooKeeper's leader-election (and lock) recipe. Each session keeps at most
// one ephemeral sequential candidate
//
//   <dir>/<session, hex>-<sequence>
//
// and the session holding the lowest has the turn. The others each watch
// only the candidate just below theirs, so a holder's end wakes one daemon,
// not all. Nothing below a candidate can appear later (sequence numbers only
// grow), so a session that saw itself lowest holds the turn until it leaves
// or ends (expiry, crash, close deletes its candidate and passes it on).
//
// Two lines: the reaper's role (<root>/pool/reapers), held for a session's
// life, so the cluster's cost of looking for stale worker IDs does not grow
// with its square; and the claimers' turn (<root>/pool/claimers), left after
// each claim, so N daemons started at once claim one after another instead
// of all racing on the pool's move count (recycle_pool.hpp), which costs
// each of them retries in proportion to N.
//
// A turn decides who spends the requests, never what is safe: a reclaim and
// a claim are versioned, move-counted multis (recycle_pool.hpp), whoever
// sends them (rule 8 of docs/design.md). A reaper's pass is made only by the
// session that holds the role at that moment (model property 9: no reading
// outlives the holding it was taken under).

#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

class CandidateLine {
 public:
  explicit CandidateLine(std::string dir);

  // Whether `zk`'s session holds the turn now. Makes the session's candidate
  // if it has none (found by name after a create whose answer was lost, so
  // no candidate of ours is left behind below us), then watches the next
  // lower one. Sends nothing while no watch has fired since the last answer.
  Result<bool, CoordError> held(ZkSession& zk);

  // The watch held() left has fired: the next held() looks again.
  void look_again() noexcept { dirty_ = true; }

  // Leaves the line: our candidate is removed, which wakes the next. A
  // remove whose answer was lost is sent again by the next leave() (until
  // then, the turn stays ours: the line waits). Nothing to do without a
  // candidate, or when the session that made it has ended.
  Result<void, CoordError> leave(ZkSession& zk);
  // Leaving inside another transaction (a claim's multi): the op that
  // removes our candidate; nullopt when it is not known for sure by name.
  std::optional<ZkOp> leave_op(const ZkSession& zk) const;
  // That transaction went through, or our candidate is gone: out of the line.
  void left() noexcept;
  // A candidate of this session may exist: leave() has something to do.
  bool in_line(const ZkSession& zk) const noexcept {
    return zk.session_id() == session_ && (create_sent_ || !candidate_.empty());
  }

  // How many candidates were below ours when the line was last looked at
  // (0 while we hold the turn): the claims to wait for, at most.
  std::size_t ahead() const noexcept { return ahead_; }
  // The session whose candidate was last found lowest; 0: none.
  std::int64_t holder_session() const noexcept { return holder_ ? session_ : 0; }
  const std::string& dir() const noexcept { return dir_; }

 private:
  Result<bool, CoordError> look(ZkSession& zk);

  std::string dir_;
  std::string prefix_;        // "<session hex>-" of session_
  std::int64_t session_ = 0;  // the session the fields below are about
  bool create_sent_ = false;  // a create went out for session_ (its answer may be lost)
  bool unsure_ = false;       // a create of session_ went unanswered: leave() lists ours
  std::string candidate_;     // our candidate's name, once known
  bool holder_ = false;
  bool dirty_ = true;
  std::size_t ahead_ = 0;
};

}  // namespace snowflake::coord
