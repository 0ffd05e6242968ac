#include "snowflake/sequence_store/strict_owner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/base/mix64.hpp"
#include "snowflake/zk/alive_node.hpp"
#include "snowflake/zk/cluster_tree.hpp"
#include "snowflake/zk/node_data.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

// FNV-1a, then splitmix64's finalizer: the same on every machine and
// version (std::hash is neither), and well spread for short keys.
std::uint64_t stable_hash(std::string_view tag, std::uint32_t id) {
  std::uint64_t h = 14695981039346656037ULL;
  auto mix_in = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (const char c : tag) mix_in(static_cast<unsigned char>(c));
  mix_in(0);
  for (int shift = 0; shift < 32; shift += 8) mix_in(static_cast<unsigned char>(id >> shift));
  return splitmix64_finalize(h + 0x9e3779b97f4a7c15ULL);
}

// The lease its writer recorded in a worker node (recycle's inuse data or
// sequential's), 0 if unreadable.
std::int64_t recorded_lease_ms(std::string_view data) {
  if (const auto inuse = decode_inuse(data)) return inuse->lease_ms;
  if (const auto sequential = decode_sequential(data)) return sequential->lease_ms;
  return 0;
}

// A recycle worker node: the pool's move count (<root>/pool/inuse's version,
// which each release, reclaim and takeover bumps) checked too, so a worker
// ID given up and claimed again under the same name since the judgement
// fails the claim (its node's version starts over).
Result<void, CoordError> pin_pool_moves(ZkSession& zk, const std::string& root,
                                        const std::string& node, std::vector<ZkOp>& checks) {
  const std::string dir = tree::inuse_dir(root);
  if (!node.starts_with(dir + "/")) return outcome::success();
  BOOST_OUTCOME_TRY(stat, zk.exists(dir));
  if (stat) checks.push_back(ZkOp::check(dir, stat->version));
  return outcome::success();
}

bool refused(const ZkError& e) {
  return e.code == ZkErrc::bad_version || e.code == ZkErrc::node_exists ||
         e.code == ZkErrc::no_node;
}

}  // namespace

std::string encode(const StrictOwner& o) {
  json j{{"worker_id", o.worker_id},
         {"node", o.node},
         {"token", o.token},
         {"address", o.address},
         {"released", o.released}};
  // Only when set: a record without it is what daemons before it wrote.
  if (o.tls) j["tls"] = true;
  return j.dump();
}

std::optional<StrictOwner> decode_strict_owner(std::string_view text) {
  auto o = decode_json_object<StrictOwner>(text, [](const json& j) {
    StrictOwner d;
    d.worker_id = json_integer_at<std::uint32_t>(j, "worker_id");
    d.node = j.at("node").get<std::string>();
    d.token = j.at("token").get<std::string>();
    d.address = j.at("address").get<std::string>();
    d.released = j.at("released").get<bool>();
    d.tls = j.contains("tls") && j.at("tls").get<bool>();
    return d;
  });
  if (o && !o->released && (o->node.empty() || o->token.empty())) return std::nullopt;
  return o;
}

std::string strict_owner_path(const std::string& root, const std::string& tag) {
  return tree::sequence_owner(root, tag);
}

std::vector<std::uint32_t> rank_owners(std::string_view tag, std::vector<std::uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::stable_sort(ids.begin(), ids.end(), [tag](std::uint32_t a, std::uint32_t b) {
    return stable_hash(tag, a) > stable_hash(tag, b);
  });
  return ids;
}

Result<OwnerRead, CoordError> read_strict_owner(ZkSession& zk, const std::string& root,
                                                const std::string& tag, bool watch) {
  BOOST_OUTCOME_TRY(found, zk.try_get(strict_owner_path(root, tag), watch));
  if (!found) {
    if (watch) {
      BOOST_OUTCOME_TRY(there, zk.exists(strict_owner_path(root, tag), true));
      (void)there;  // made meanwhile: its watch fires
    }
    return OwnerRead{};
  }
  auto owner = decode_strict_owner(found->data);
  if (!owner) {
    return CoordError{CoordErrc::unusable,
                      fmt::format("{} holds no owner record", strict_owner_path(root, tag))};
  }
  return OwnerRead{std::move(owner), found->stat.version};
}

Result<TakeoverJudgement, CoordError> judge_takeover(ZkSession& zk, const std::string& root,
                                                     const StrictOwner& owner,
                                                     const TakeoverTimings& timings) {
  TakeoverJudgement j;
  if (owner.released) {
    j.allowed = true;
    j.why = "released";
    return j;
  }
  const AliveNodes alive(root);
  BOOST_OUTCOME_TRY(holder, zk.try_get(alive.path(owner.worker_id), /*watch=*/true));
  if (holder) {
    const auto token = decode_owner(holder->data);
    if (token && token->instance == owner.token) {
      j.why = "its run holds its worker ID";  // alive: it hands over when it stops
      return j;
    }
  }
  BOOST_OUTCOME_TRY(node, zk.try_get(owner.node));
  if (!holder && !node) {
    // Given back or reclaimed (each after its run stopped, or its lease
    // ran out), or lost with ZooKeeper's data (frozen: raised first); a
    // run that takes the worker ID again holds its alive node.
    const auto absent = alive.absent(owner.worker_id);
    j.checks.assign(absent.begin(), absent.end());
    j.allowed = true;
    j.why = fmt::format("worker ID {}'s node is gone", owner.worker_id);
    return j;
  }
  // The longer of ours and the owner's own lease (as its node says) plus
  // the margin: a daemon whose settings differ (a rollout) is waited out too.
  std::int64_t wait = timings.reclaim_after.count();
  if (node) wait = std::max(wait, recorded_lease_ms(node->data) + timings.safety_margin.count());
  std::int64_t from_ms = 0;  // ZooKeeper's time from which it may be taken over
  if (holder) {
    // Another run holds the worker ID: the owner's heartbeats fail since.
    from_ms = holder->stat.ctime_ms + wait;
    j.checks.push_back(ZkOp::check(alive.path(owner.worker_id), holder->stat.version));
    j.why = fmt::format("worker ID {} is another run's since ZooKeeper's {}", owner.worker_id,
                        holder->stat.ctime_ms);
  } else {
    // Its last heartbeat; the claim lands only if no later one did, and
    // no session holds the worker ID then.
    from_ms = node->stat.mtime_ms + wait;
    const auto absent = alive.absent(owner.worker_id);
    j.checks.assign(absent.begin(), absent.end());
    j.why = fmt::format("worker ID {} last written at ZooKeeper's {}", owner.worker_id,
                        node->stat.mtime_ms);
  }
  if (node) j.checks.push_back(ZkOp::check(owner.node, node->stat.version));
  BOOST_OUTCOME_TRY(pin_pool_moves(zk, root, owner.node, j.checks));
  BOOST_OUTCOME_TRY(now, zk.time_of_probe(tree::time_probe_prefix(root)));
  if (!now) {
    j.why += " (ZooKeeper's time cannot be read: no right to make a probe node)";
    j.wait = std::chrono::milliseconds(wait);
    return j;
  }
  j.allowed = *now >= from_ms;
  if (!j.allowed) j.wait = std::chrono::milliseconds(from_ms - *now);
  return j;
}

Result<bool, CoordError> claim_strict_owner(ZkSession& zk, const std::string& root,
                                            const std::string& tag, const OwnerRead& read,
                                            const StrictOwner& me,
                                            const std::vector<ZkOp>& checks) {
  // No record, no claim: the record is made with the strict node (seq
  // create, seq order, a freeze that makes the node again) and deleted only
  // by `seq order TAG per-daemon`, which a claim must not undo.
  if (read.version < 0) return false;
  std::vector<ZkOp> ops = checks;
  ops.push_back(ZkOp::set(strict_owner_path(root, tag), encode(me), read.version));
  auto written = zk.multi(ops);
  if (written) return true;
  if (refused(written.error())) return false;
  if (written.error().outcome_unknown()) {
    // Read back: ours if the record is (our token is unique to this run).
    BOOST_OUTCOME_TRY(now, read_strict_owner(zk, root, tag, false));
    return now.owner && *now.owner == me;
  }
  return CoordError::from(written.error());
}

Result<bool, CoordError> release_strict_owner(ZkSession& zk, const std::string& root,
                                              const std::string& tag, const OwnerRead& read,
                                              const std::optional<ZkOp>& node_op) {
  if (!read.owner) return false;
  StrictOwner released = *read.owner;
  released.released = true;
  std::vector<ZkOp> ops;
  if (node_op) ops.push_back(*node_op);
  ops.push_back(ZkOp::set(strict_owner_path(root, tag), encode(released), read.version));
  auto written = zk.multi(ops);
  if (written) return true;
  if (refused(written.error())) return false;
  if (written.error().outcome_unknown()) {
    // Read back, as a claim does: a release whose answer was lost but which
    // landed must count, or the next owner waits out the whole takeover for
    // a tag given back. Released and naming our run: ours (nobody else
    // writes our token). Not written yet (the record as read, version and
    // all): once more, conditional as before.
    BOOST_OUTCOME_TRY(now, read_strict_owner(zk, root, tag, false));
    if (now.owner && *now.owner == released) return true;
    if (now.version != read.version || now.owner != read.owner) return false;
    written = zk.multi(ops);
    if (written) return true;
    if (refused(written.error())) return false;
  }
  return CoordError::from(written.error());
}

}  // namespace snowflake::coord
