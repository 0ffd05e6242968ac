#include "snowflake/workers/candidate_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

// A candidate's place: the sequence number ZooKeeper appended (the digits
// after the last '-'). nullopt for a name that is not a candidate's.
std::optional<std::int64_t> sequence_of(const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size()) return std::nullopt;
  std::int64_t seq = 0;
  const char* first = name.data() + dash + 1;
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, seq);
  if (ec != std::errc() || end != last) return std::nullopt;
  return seq;
}

struct Candidate {
  std::int64_t seq;
  std::string name;
  bool ours;
};

}  // namespace

CandidateLine::CandidateLine(std::string dir) : dir_(std::move(dir)) {}

Result<bool, CoordError> CandidateLine::held(ZkSession& zk) {
  if (zk.session_id() != session_) {
    // A new session: the old one's candidate goes with it (or already has).
    session_ = zk.session_id();
    prefix_ = fmt::format("{:016x}-", static_cast<std::uint64_t>(session_));
    create_sent_ = false;
    unsure_ = false;
    candidate_.clear();
    holder_ = false;
    dirty_ = true;
    ahead_ = 0;
  }
  if (!dirty_) return holder_;
  dirty_ = false;
  auto looked = look(zk);
  if (!looked) {
    holder_ = false;
    dirty_ = true;  // look again next time
  }
  return looked;
}

Result<bool, CoordError> CandidateLine::look(ZkSession& zk) {
  for (int round = 0; round < 4; ++round) {
    if (candidate_.empty() && !create_sent_) {
      create_sent_ = true;
      auto made = zk.create(tree::child(dir_, prefix_), "", CreateMode::ephemeral_sequential);
      if (!made && made.error().code == ZkErrc::no_node) {
        // A cluster made by an older version has no directory for candidates.
        if (auto dir = zk.ensure_path(dir_); !dir) {
          create_sent_ = false;
          return CoordError::from(dir.error());
        }
        made = zk.create(tree::child(dir_, prefix_), "", CreateMode::ephemeral_sequential);
      }
      if (!made) {
        // Unanswered, it may have been made: the listing below finds it.
        if (!made.error().outcome_unknown()) create_sent_ = false;
        unsure_ = unsure_ || made.error().outcome_unknown();
        return CoordError::from(made.error());
      }
      candidate_ = made.value().substr(dir_.size() + 1);
    }
    BOOST_OUTCOME_TRY(names, zk.children(dir_));
    std::vector<Candidate> all;
    for (const auto& name : names) {
      if (auto seq = sequence_of(name)) all.push_back({*seq, name, name.starts_with(prefix_)});
    }
    std::sort(all.begin(), all.end(),
              [](const Candidate& a, const Candidate& b) { return a.seq < b.seq; });
    // Ours: the lowest of this session's. Two of ours (a create answered
    // lost, then made again before a lagging server showed the first):
    // waiting on our own higher one would wait for ourselves.
    const auto mine =
        std::find_if(all.begin(), all.end(), [](const Candidate& c) { return c.ours; });
    if (mine == all.end()) {
      // Never made (its answer was lost and it was not applied), or removed
      // by hand: make one.
      candidate_.clear();
      create_sent_ = false;
      continue;
    }
    candidate_ = mine->name;
    ahead_ = static_cast<std::size_t>(mine - all.begin());
    for (auto extra = mine + 1; extra != all.end(); ++extra) {
      if (extra->ours) (void)zk.remove(tree::child(dir_, extra->name), -1);
    }
    if (mine == all.begin()) {
      holder_ = true;
      return true;
    }
    // Watch the one just below ours: its end is our turn (or the next
    // lower's, whose watch we then take).
    BOOST_OUTCOME_TRY(below, zk.exists(tree::child(dir_, (mine - 1)->name), /*watch=*/true));
    if (below) {
      holder_ = false;
      return false;
    }
    // Gone since the listing: look again.
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the reaper's candidates in {} kept changing", dir_)};
}

Result<void, CoordError> CandidateLine::leave(ZkSession& zk) {
  if (in_line(zk)) {
    if (!candidate_.empty() && !unsure_) {
      auto gone = zk.remove(tree::child(dir_, candidate_), -1);
      if (!gone && gone.error().code != ZkErrc::no_node) return CoordError::from(gone.error());
    } else {
      // A create whose answer was lost: ours, if made, are found by name
      // (one a lagging server did not show when we looked may be there now).
      BOOST_OUTCOME_TRY(names, zk.children(dir_));
      for (const auto& name : names) {
        if (!name.starts_with(prefix_)) continue;
        auto gone = zk.remove(tree::child(dir_, name), -1);
        if (!gone && gone.error().code != ZkErrc::no_node) return CoordError::from(gone.error());
      }
    }
  }
  left();
  return outcome::success();
}

std::optional<ZkOp> CandidateLine::leave_op(const ZkSession& zk) const {
  if (!in_line(zk) || candidate_.empty() || unsure_) return std::nullopt;
  return ZkOp::remove(tree::child(dir_, candidate_), -1);
}

void CandidateLine::left() noexcept {
  create_sent_ = false;
  unsure_ = false;
  candidate_.clear();
  holder_ = false;
  dirty_ = true;
  ahead_ = 0;
}

}  // namespace snowflake::coord
