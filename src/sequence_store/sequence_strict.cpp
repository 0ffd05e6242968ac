// The supplier's strict sequences (strict_owner.hpp says why the order
// holds): which daemon hands out each, and the handover.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

using Clock = BootClock;
using std::chrono::milliseconds;

bool same_owner(const StrictOwner& a, const StrictOwner& b) {
  return a.worker_id == b.worker_id && a.node == b.node && a.token == b.token;
}

std::optional<std::uint32_t> worker_id_of(std::string_view name) {
  std::uint32_t id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return id;
}

}  // namespace

constexpr std::chrono::seconds kMissingRecordLook{30};

void SequenceSupplier::list_strict_tags() {
  const std::string dir = tree::sequence_owners_dir(options_.root);
  auto names = zk_->try_children(dir, /*watch=*/true);
  if (!names) {
    relist_strict_.store(true);
    failed(names.error(), "cannot list the strict sequences");
    return;
  }
  if (!names.value()) {
    // None yet: watched for (the first `seq create --order strict` makes it).
    auto there = zk_->exists(dir, /*watch=*/true);
    if (!there) {
      relist_strict_.store(true);
      failed(there.error(), "cannot watch for strict sequences");
    } else if (there.value()) {
      relist_strict_.store(true);  // made meanwhile
    }
    return;
  }
  // `seq order TAG per-daemon` deleted its record: every daemon hands it
  // out again (what it holds stays unique).
  for (auto it = stricts_.begin(); it != stricts_.end();) {
    if (std::find(names.value()->begin(), names.value()->end(), it->first) !=
        names.value()->end()) {
      ++it;
      continue;
    }
    // Only if its node says so too: a record lost otherwise (ZooKeeper's
    // data, a hand) leaves the tag strict, handed out by nobody, and said.
    auto node = read_sequence(*zk_, options_.root, it->first);
    if (node && node.value().node.strict) {
      if (!it->second.record_missing) mark_record_missing(it->first, it->second);
      ++it;
      continue;
    }
    if (!node) {  // gone with ZooKeeper's data, or unread: strict until it says otherwise
      if (node.error().code != CoordErrc::no_sequence) {
        failed(node.error(), fmt::format("cannot read \"{}\"", it->first));
        relist_strict_.store(true);
      }
      ++it;
      continue;
    }
    if (SequenceEntry* entry = registry_.find(it->first)) {
      entry->strict.set_per_daemon();
      entry->waiting.wake_all();
      spdlog::info("sequences: \"{}\" is per-daemon again: handed out by every daemon", it->first);
    }
    it = stricts_.erase(it);
  }
  for (const std::string& tag : *names.value()) {
    if (!is_valid_name(tag)) continue;
    SequenceEntry* entry = registry_.find(tag);
    if (!entry) entry = registry_.add(tag);
    if (!entry) continue;  // the table is full: list_tags says so
    if (!entry->strict.strict()) {
      entry->strict.set_strict();
      spdlog::info("sequences: \"{}\" is strict: handed out by its owner only", tag);
    }
    StrictState& ss = stricts_[tag];
    if (ss.record_missing) {
      ss.record_missing = false;
      ss.read_owed = true;
      spdlog::info("sequences: \"{}\" has an owner record again", tag);
    }
  }
}

void SequenceSupplier::mark_record_missing(const std::string& tag, StrictState& ss) {
  // Said once, and left alone until the record is back: the listing's watch
  // tells (before, every pass read, relisted and failed a claim: 190
  // ZooKeeper requests over 10 heartbeats from one daemon for one tag).
  ss.record_missing = true;
  ss.look_at = Clock::now() + kMissingRecordLook;
  spdlog::error(
      "sequences: \"{}\" is strict but has no owner record any more: nobody hands it out "
      "(503 not_owner) until `snowflaked seq order {} strict` makes it again",
      tag, tag);
  if (SequenceEntry* entry = registry_.find(tag)) {
    if (entry->strict.owned_generation() != 0) disown(*entry);
    entry->strict.set_coming(false);
    entry->strict.ownerless(true);
    entry->strict.set_owner_address(std::string());
    entry->waiting.wake_all();
  }
}

bool SequenceSupplier::read_owner(SequenceEntry& entry, StrictState& ss, std::uint64_t generation) {
  ss.read_generation = generation;
  auto read = read_strict_owner(*zk_, options_.root, entry.tag, /*watch=*/true);
  if (!read) {
    failed(read.error(), fmt::format("cannot read the owner of \"{}\"", entry.tag));
    return false;
  }
  if (read.value().owner != ss.read.owner) {
    entry.strict.owner_changes.fetch_add(1, std::memory_order_relaxed);
  }
  ss.read = std::move(read).value();
  ss.read_owed = false;
  // No record: made per-daemon (seq order), or not yet made: the listing
  // says which.
  if (ss.read.version < 0 && !ss.record_missing) relist_strict_.store(true);
  ss.look_at = {};  // judged again with what was read
  const bool owned = ss.read.owner && !ss.read.owner->released;
  entry.strict.ownerless(!owned);
  entry.strict.set_owner_address(owned ? ss.read.owner->address : std::string(),
                                 owned && ss.read.owner->tls);
  // Requests waiting on another daemon that gave no answer go on to this
  // one (http/sequence_routes.cpp: a handover refuses nothing).
  entry.waiting.wake_all();
  return true;
}

void SequenceSupplier::supply_strict(SequenceEntry& entry, TagState& state) {
  StrictState& ss = stricts_[entry.tag];
  {
    std::lock_guard lock(changed_mutex_);
    if (owners_changed_.erase(entry.tag) > 0) ss.read_owed = true;
  }
  const Lease* lease = options_.lease;
  // The lease's run before who we are: a worker ID lost and another taken
  // after this moves the run, and the gate does not open in the old one.
  const std::uint64_t generation = lease ? lease->generation() : 0;
  const std::optional<StrictOwner> me =
      options_.owner_identity ? options_.owner_identity() : std::nullopt;
  // Ours in a lease run that has ended: read again before handing out in
  // the new one (a takeover may have landed while it had run out).
  if (lease && entry.strict.owned_generation() != 0 &&
      entry.strict.owned_generation() != lease->generation()) {
    ss.read_owed = true;
  }
  if (ss.record_missing) {
    // The listing's watch says when the record is back; a look every 30 s
    // besides, for a node made per-daemon meanwhile (no child changes).
    if (Clock::now() >= ss.look_at) {
      ss.look_at = Clock::now() + kMissingRecordLook;
      relist_strict_.store(true);
    }
    return;
  }
  if (ss.read_owed && !read_owner(entry, ss, generation)) return;
  const bool ours =
      me && ss.read.owner && !ss.read.owner->released && same_owner(*ss.read.owner, *me);
  entry.strict.set_coming(ours);
  if (!ours) {
    if (entry.strict.owned_generation() != 0) disown(entry);
    if (me && lease && Clock::now() >= ss.look_at) try_to_own(entry, ss, *me);
    return;
  }
  if (entry.strict.owned_generation() != ss.read_generation) {
    if (!lease->may_issue() || lease->generation() != ss.read_generation) {
      ss.read_owed = true;  // read in a run that is over (or none): again in the next
      return;
    }
    entry.strict.own(ss.read_generation);
    spdlog::info("sequences: \"{}\" is ours (worker ID {}): handed out here", entry.tag,
                 me->worker_id);
    entry.waiting.wake_all();
  }
  supply(entry, state);
}

std::optional<milliseconds> SequenceSupplier::claim_delay(const std::string& tag,
                                                          std::uint32_t worker_id) {
  auto names = zk_->children(tree::alive_dir(options_.root));
  if (!names) {
    failed(names.error(), "cannot list the worker IDs in use");
    return std::nullopt;
  }
  std::vector<std::uint32_t> ids{worker_id};
  for (const auto& name : names.value()) {
    if (const auto id = worker_id_of(name)) ids.push_back(*id);
  }
  const auto ranked = rank_owners(tag, std::move(ids));
  const auto place = std::find(ranked.begin(), ranked.end(), worker_id) - ranked.begin();
  return options_.claim_stagger * place;
}

void SequenceSupplier::try_to_own(SequenceEntry& entry, StrictState& ss, const StrictOwner& me) {
  const auto now = Clock::now();
  std::vector<ZkOp> checks;
  if (!ss.read.owner || ss.read.owner->released) {
    if (!ss.unowned_since) ss.unowned_since = now;
    const auto delay = claim_delay(entry.tag, me.worker_id);
    if (!delay || now < *ss.unowned_since + *delay) {
      ss.look_at = delay ? *ss.unowned_since + *delay : now + milliseconds(1000);
      return;
    }
  } else {
    ss.unowned_since.reset();
    auto judged = judge_takeover(*zk_, options_.root, *ss.read.owner,
                                 {options_.reclaim_after, options_.safety_margin});
    if (!judged) {
      failed(judged.error(), fmt::format("cannot judge the owner of \"{}\"", entry.tag));
      ss.look_at = now + milliseconds(1000);
      return;
    }
    // Waited out (or taken over now): its run no longer holds its worker ID.
    entry.strict.ownerless(judged.value().wait.has_value() || judged.value().allowed);
    if (!judged.value().allowed) {
      // The owner's alive node is watched: its going is heard at once.
      ss.look_at =
          now + std::clamp(judged.value().wait.value_or(milliseconds(60'000)) + milliseconds(50),
                           milliseconds(100), milliseconds(60'000));
      spdlog::debug("sequences: \"{}\" stays with {}: {}", entry.tag, ss.read.owner->address,
                    judged.value().why);
      return;
    }
    spdlog::info("sequences: taking \"{}\" over from {} (worker ID {}): {}", entry.tag,
                 ss.read.owner->address, ss.read.owner->worker_id, judged.value().why);
    checks = std::move(judged.value().checks);
  }
  if (!options_.lease->may_issue()) {
    ss.look_at = now + milliseconds(500);  // an owner must be able to hand out
    return;
  }
  // Nothing taken before this claim goes out under it (a range of an
  // earlier ownership, or of the tag before it was strict): below the last
  // owner's numbers, maybe.
  drop_held(entry);
  auto claimed = claim_strict_owner(*zk_, options_.root, entry.tag, ss.read, me, checks);
  ss.read_owed = true;  // read (and confirmed) again either way
  if (!claimed) {
    failed(claimed.error(), fmt::format("cannot claim \"{}\"", entry.tag));
  } else if (claimed.value()) {
    ss.unowned_since.reset();
    ss.read.owner = me;  // as written: a stop before it is read again releases it
    entry.strict.set_coming(true);
    registry_.request_refill();  // confirmed on the next pass, at once
  }
}

bool SequenceSupplier::named_owner(const SequenceEntry& entry) const {
  const auto ss = stricts_.find(entry.tag);
  if (ss == stricts_.end() || !ss->second.read.owner || ss->second.read.owner->released) {
    return false;
  }
  const auto me = options_.owner_identity ? options_.owner_identity() : std::nullopt;
  return me && same_owner(*ss->second.read.owner, *me);
}

void SequenceSupplier::drop_held(SequenceEntry& entry) {
  const auto held = record_.tags.find(entry.tag);
  if (held != record_.tags.end() && held->second.to > 0) {
    entry.buffer.drop_through(held->second.to - 1);
  }
}

void SequenceSupplier::disown(SequenceEntry& entry) {
  entry.strict.disown();
  // Its new owner takes above every range we took: what is left here must
  // never go out after its first number.
  drop_held(entry);
  spdlog::warn("sequences: \"{}\" is no longer ours: its owner is {}", entry.tag,
               entry.strict.owner_address().empty() ? std::string("nobody yet")
                                                    : entry.strict.owner_address());
}

bool SequenceSupplier::release_strict(SequenceEntry& entry,
                                      std::optional<std::int64_t> first_unused) {
  const auto me = options_.owner_identity ? options_.owner_identity() : std::nullopt;
  if (!me) return false;
  // Twice at most: with the rest given back, then (the node or the record
  // moved meanwhile) without it, a gap, if the record is still ours.
  for (int attempt = 0; attempt < 2; ++attempt) {
    // The node read before the record and checked (or written) with it:
    // `seq order` writes the node whenever it deletes or makes the record,
    // so a record deleted and made again since, whose version may have
    // come round to the one read, fails the release rather than mark
    // another's claim released.
    auto node = read_sequence(*zk_, options_.root, entry.tag);
    auto read = read_strict_owner(*zk_, options_.root, entry.tag, /*watch=*/false);
    // (A node that is gone or unusable is neither checked nor written.)
    if (!read || (!node && node.error().zk)) {
      failed(read ? node.error() : read.error(), fmt::format("cannot release \"{}\"", entry.tag));
      return false;
    }
    if (!read.value().owner || !same_owner(*read.value().owner, *me)) return false;
    std::optional<ZkOp> node_op;
    bool giving_back = false;
    if (node) {
      const std::string path = sequence_path(options_.root, entry.tag);
      node_op = ZkOp::check(path, node.value().version);
      if (attempt == 0 && first_unused) {
        if (auto back = plan_give_back(node.value().node, options_.run, *first_unused)) {
          node_op = ZkOp::set(path, encode(*back), node.value().version);
          giving_back = true;
        }
      }
    }
    auto released = release_strict_owner(*zk_, options_.root, entry.tag, read.value(), node_op);
    if (!released) {
      failed(released.error(), fmt::format("cannot release \"{}\"", entry.tag));
      return false;
    }
    if (released.value()) {
      spdlog::info("sequences: \"{}\" released{}", entry.tag,
                   giving_back ? fmt::format(", the numbers from {} given back", *first_unused)
                               : std::string());
      return true;
    }
  }
  return false;
}

}  // namespace snowflake::coord
