#include "snowflake/workers/sequential_worker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

constexpr std::size_t kSequenceDigits = 10;  // ZooKeeper's %010d suffix
constexpr int kMaxCreateAttempts = 5;

}  // namespace

SequentialWorker::SequentialWorker(const std::string& root, std::string name,
                                   std::uint32_t max_worker_id)
    : forever_(tree::forever_dir(root)),
      alive_(root),
      name_(std::move(name)),
      max_worker_id_(max_worker_id) {
  const auto colon = name_.rfind(':');
  host_ = name_.substr(0, colon);
  port_ = static_cast<std::uint32_t>(std::stoul(name_.substr(colon + 1)));
}

std::optional<std::pair<std::string, std::uint64_t>> SequentialWorker::find_ours(
    const std::vector<std::string>& children) const {
  std::optional<std::pair<std::string, std::uint64_t>> best;
  const std::string prefix = name_ + "-";
  for (const auto& child : children) {
    if (child.size() != prefix.size() + kSequenceDigits || !child.starts_with(prefix)) continue;
    std::uint64_t seq = 0;
    const char* first = child.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, child.data() + child.size(), seq);
    if (ec != std::errc() || end != child.data() + child.size()) continue;
    if (!best || seq < best->second) best = {child, seq};
  }
  return best;
}

Result<void, CoordError> SequentialWorker::take_alive(ZkSession& zk, std::uint32_t id,
                                                      const OwnerToken& owner) {
  auto made = zk.create(alive_.path(id), encode(owner), CreateMode::ephemeral);
  if (made) return outcome::success();
  if (made.error().code != ZkErrc::node_exists && !made.error().outcome_unknown()) {
    return CoordError::from(made.error());
  }
  BOOST_OUTCOME_TRY(holder, alive_.holder(zk, id));
  if (holder && holder->session == zk.session_id()) return outcome::success();  // a lost answer
  if (!holder) return CoordError::from(made.error());  // gone meanwhile: try again
  return CoordError{CoordErrc::held,
                    fmt::format("the identity {} (worker ID {}) is in use by {}; waiting for it to "
                                "stop (two daemons with one coordinator.advertise?)",
                                name_, id, holder->describe())};
}

Result<SequentialClaim, CoordError> SequentialWorker::acquire(
    ZkSession& zk, const OwnerToken& owner, std::int64_t now_ms, std::int64_t lease_ms,
    std::int64_t max_floor_ms, const std::optional<Predecessor>& predecessor) {
  for (const auto& dir : {forever_, alive_.dir()}) {
    BOOST_OUTCOME_TRY(zk.ensure_path(dir));
  }
  // Bounded: a lost connection during a create is resolved by listing again.
  for (int attempt = 0; attempt < kMaxCreateAttempts; ++attempt) {
    BOOST_OUTCOME_TRY(children, zk.children(forever_));
    auto ours = find_ours(children);
    if (!ours) {
      SequentialData fresh{host_, port_, owner, 0, now_ms, 0, lease_ms};
      auto created = zk.create(tree::child(forever_, name_ + "-"), encode(fresh),
                               CreateMode::persistent_sequential);
      // Created or not (a lost answer), the next listing tells; should a lost
      // create have made two, the lowest number is ours.
      if (!created && !created.error().outcome_unknown()) return CoordError::from(created.error());
      continue;
    }
    const std::string path = tree::child(forever_, ours->first);
    if (ours->second > max_worker_id_) {
      return CoordError{CoordErrc::workers_exhausted,
                        fmt::format("worker IDs exhausted: {} has number {}, above the layout's "
                                    "largest worker ID {}; numbers are never reused. Use the "
                                    "recycle strategy (coordinator.type \"recycle\") or more "
                                    "layout.worker_bits, with a new zookeeper.root",
                                    path, ours->second, max_worker_id_)};
    }
    const auto id = static_cast<std::uint32_t>(ours->second);
    BOOST_OUTCOME_TRYV(take_alive(zk, id, owner));

    BOOST_OUTCOME_TRY(node, zk.get(path));
    const auto old = decode_sequential(node.data);
    if (!old) {
      return CoordError{CoordErrc::unusable,
                        fmt::format("{} holds \"{}\", which is not ours to read: the last instant "
                                    "its earlier holder used is unknown",
                                    path, node.data)};
    }
    std::int64_t floor = 0;
    // Whom this write supersedes while their lease may run: kept from the
    // node (our own lost write, our dead run), or the node's live writer.
    std::int64_t superseded_until = old->superseded_until;
    if (old->owner == owner) {
      floor = std::max(old->floor, old->hwm);  // our own write, whose answer was lost
    } else if (predecessor && predecessor->node == path && old->owner == predecessor->owner) {
      // Written last by our own previous run, which is dead: its state file
      // reserved everything it could issue.
      floor = std::max({predecessor->reserved_until, old->floor, old->hwm});
    } else {
      floor = old->last_possible_ms(lease_ms);
      const std::int64_t old_lease = old->owner ? old->lease_ms : lease_ms;
      if (old_lease > 0)
        superseded_until = std::max(superseded_until, node.stat.mtime_ms + old_lease);
    }
    if (floor > max_floor_ms) {
      (void)zk.remove(alive_.path(id), -1);  // let it go until the clock comes closer
      return CoordError{CoordErrc::floors_ahead,
                        fmt::format("the floor of {} (worker ID {}) is {} ms beyond what we may "
                                    "wait out",
                                    path, id, floor - max_floor_ms)};
    }
    SequentialData mine{host_, port_, owner, floor, now_ms, floor, lease_ms, superseded_until};
    auto written = zk.set(path, encode(mine), node.stat.version);
    if (written) {
      return SequentialClaim{id,
                             path,
                             mine,
                             written.value().version,
                             written.value().mtime_ms,
                             true,
                             zk.session_id(),
                             written.value().mzxid};
    }
    if (written.error().code == ZkErrc::bad_version || written.error().outcome_unknown()) continue;
    return CoordError::from(written.error());
  }
  return CoordError{
      CoordErrc::zookeeper,
      fmt::format("could not settle our node under {} (connection kept failing)", forever_)};
}

Result<void, CoordError> SequentialWorker::heartbeat(ZkSession& zk, SequentialClaim& claim,
                                                     std::int64_t now_ms, std::int64_t hwm) {
  SequentialData next = claim.data;
  next.ts = now_ms;
  next.hwm = hwm;
  for (int attempt = 0; attempt < kMaxCreateAttempts; ++attempt) {
    auto written =
        zk.multi({ZkOp::set(claim.path, encode(next), claim.version),
                  alive_.keep(zk, claim.worker_id, *claim.data.owner, claim.alive_session)});
    if (written) {
      claim.data = next;
      claim.version = written.value()[0].version;
      claim.mtime_ms = written.value()[0].mtime_ms;
      claim.zxid = written.value()[0].mzxid;
      claim.alive_session = zk.session_id();
      return outcome::success();
    }
    const ZkError& e = written.error();
    BOOST_OUTCOME_TRY(about_alive, alive_.recover(zk, claim.worker_id, e, *claim.data.owner,
                                                  claim.alive_session));
    if (about_alive) continue;
    if (e.path == claim.path && e.code == ZkErrc::no_node) {
      // Nothing deletes a forever node: ZooKeeper lost it (or an operator did).
      return CoordError{CoordErrc::vanished, fmt::format("{} was deleted", claim.path)};
    }
    if (e.path == claim.path && e.code == ZkErrc::bad_version) {
      // Our own earlier write whose answer was lost, or another daemon's.
      BOOST_OUTCOME_TRY(node, zk.get(claim.path));
      const auto now = decode_sequential(node.data);
      if (!now || now->owner != claim.data.owner) {
        return CoordError{CoordErrc::lost,
                          fmt::format("{} was written by another daemon", claim.path)};
      }
      claim.version = node.stat.version;
      continue;
    }
    return CoordError::from(e);
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("{} kept changing during our heartbeat", claim.path)};
}

Result<std::uint32_t, CoordError> SequentialWorker::numbers_used(ZkSession& zk) const {
  auto stat = zk.exists(forever_);
  if (!stat) return CoordError::from(stat.error());
  if (!stat.value()) return 0U;
  // ZooKeeper numbers a sequential child with its parent's cversion, which
  // every create and delete of a child raises.
  return static_cast<std::uint32_t>(std::max(0, stat.value()->cversion));
}

Result<void, CoordError> SequentialWorker::release(ZkSession& zk, SequentialClaim& claim,
                                                   std::int64_t floor) {
  SequentialData last = claim.data;
  last.ts = floor;
  last.hwm = floor;
  last.lease_ms = 0;  // nothing after ts
  std::vector<ZkOp> ops{ZkOp::set(claim.path, encode(last), claim.version)};
  if (claim.alive_session == zk.session_id())
    ops.push_back(ZkOp::remove(alive_.path(claim.worker_id), -1));
  BOOST_OUTCOME_TRY(zk.multi(ops));
  claim.data = last;
  return outcome::success();
}

}  // namespace snowflake::coord
