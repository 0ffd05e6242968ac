// The supplier's side of sequences that restart each period
// (sequences/periodic.hpp): a definition learned, its periods made and
// supplied like tags, let go of once over on every clock, and removed after
// their retention. Why each step is safe: model/period.pml and
// docs/design.md, "Sequences that restart each period".

#include <spdlog/spdlog.h>

#include <algorithm>

#include "snowflake/base/clock.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/sequences/period_spread.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

// How long before a boundary the next period is made and its first range
// taken (no request waits for ZooKeeper at midnight), and how long past a
// period's end plus the skew bound this daemon still holds it (let go of,
// with its holder entry, before anyone may remove its node): each daemon
// at its own point of a window, so a fleet does not act at one instant
// (sequences/period_spread.hpp).
static_assert(kLetGoMarginMaxMs < kPeriodRemovalMarginMs);
static_assert(kPeriodRemovalAfterMs == kPeriodRemovalMarginMs);
// For this long after a period begins, its ranges are sized by the rate of
// the period before (at least): its own meter starts from nothing.
constexpr std::int64_t kRateHintMs = 60'000;
// A refused or failed step is tried again after this (not every pass).
constexpr auto kPeriodRetry = std::chrono::seconds(1);
// ZooKeeper's clock as last seen is read again by a probe once this old
// (BootClock's drift widens it by a millisecond a second: 0.3 s at most).
// The coordinator's heartbeats (3 minutes by default) see it more often:
// static mode's daemons probe.
constexpr auto kZooKeeperClockMaxAge = std::chrono::minutes(5);

std::int64_t wall_ms() { return SystemClock::read_wall_ns() / 1'000'000; }

}  // namespace

bool SequenceSupplier::read_definition(const std::string& tag, PeriodicState& ps) {
  auto read = read_sequence(*zk_, options_.root, tag);
  if (!read) {
    failed(read.error(), fmt::format("cannot read the definition of \"{}\"", tag));
    return false;
  }
  ps.definition = std::move(read).value();
  ps.definition_stale = false;
  return true;
}

void SequenceSupplier::learn_periodic(SequenceEntry& parent) {
  PeriodicState& ps = periodics_[parent.tag];
  const auto now = BootClock::now();
  if (!zk_ || now < ps.retry_at) return;
  ps.retry_at = now + kPeriodRetry;
  if (!read_definition(parent.tag, ps)) return;
  const SequenceNode& d = ps.definition.node;
  auto rule = PeriodRule::make(d.reset, d.time_zone);
  if (!rule) {
    ps.retry_at = now + std::chrono::minutes(1);
    spdlog::error(
        "sequences: \"{}\" restarts each period in time zone \"{}\", which this machine's tzdata "
        "does not have: it is not served here (install the tzdata package of its release)",
        parent.tag, d.time_zone);
    return;
  }
  auto printed = NumberTemplate::parse(d.number_template, d.reset);
  if (!printed) {
    ps.retry_at = now + std::chrono::minutes(1);
    spdlog::error("sequences: \"{}\": its template '{}' is not served here: {}", parent.tag,
                  d.number_template, printed.error());
    return;
  }
  parent.set_periodic(
      std::make_unique<PeriodicSequence>(parent.tag, *rule, std::move(printed).value()));
  ps.retry_at = {};
  relist_.store(true);  // its periods' nodes, for the removal
  registry_.request_refill();
  spdlog::info("sequences: \"{}\" restarts each {} period in {}, printed as '{}'", parent.tag,
               to_string(d.reset), d.time_zone, d.number_template);
}

void SequenceSupplier::supply_periodic(SequenceEntry& parent) {
  PeriodicSequence& seq = *parent.periodic.load(std::memory_order_relaxed);
  PeriodicState& ps = periodics_[parent.tag];
  // The slots of periods over here and out of the lookup: freed once no
  // request holds them (a daemon runs for years: a slot a day otherwise).
  seq.free_unused([this](const PeriodSlot* slot) {
    const auto named = period_slots_.find(slot->entry.tag);
    return named != period_slots_.end() && named->second == slot;
  });
  std::int64_t now = wall_ms();
  // Nothing is made for a tag nobody asked this daemon for, or frozen.
  const bool wanted = parent.wanted.load(std::memory_order_acquire) &&
                      !parent.frozen.load(std::memory_order_acquire);
  // A clock stepped away from ZooKeeper's opens no period (two days ahead
  // would push the current one out of the lookup) and dates no number; the
  // router refuses clock_skew meanwhile. What follows goes by the very
  // reading judged (the clock may be stepped again meanwhile).
  if (wanted && zk_ && zk_->connected()) {
    const auto agreed = agreeing_wall_ms();
    if (!agreed) return;
    now = *agreed;
  }
  if (wanted && zk_ && zk_->connected() && BootClock::now() >= ps.retry_at) {
    const Period current = seq.rule().period_at(now);
    open_period(parent, ps, current);
    const Period next = seq.rule().next_after(current);
    if (now >=
        current.next_begins_ms - period_lead_ms(options_.run, period_tag(parent.tag, next.key))) {
      open_period(parent, ps, next);
    }
    if (now >= ps.removal_next_ms || current.key != ps.removal_looked_in) {
      remove_old_periods(seq, ps, current);
    }
  }
  const auto held = seq.hold();
  const PeriodSlot* now_serving = seq.slot_at(now, held);
  bool took = false;
  for (PeriodSlot* slot : seq.live(held)) {
    // The clock's period and the next one; a period over here takes no
    // more (its last range would be a gap).
    const bool ahead = slot->period.begins_ms > now;
    if ((slot != now_serving && !ahead) || !period_slots_.contains(slot->entry.tag)) continue;
    TagState& state = tags_[slot->entry.tag];
    // A period's first minute is sized by the rate of the one before, so
    // the requests that move over at midnight find a range that lasts.
    const bool new_period = ahead || now < slot->period.begins_ms + kRateHintMs;
    if (!new_period) ps.rate = slot->entry.gauges.rate.load(std::memory_order_relaxed);
    state.rate_hint = new_period ? ps.rate : 0;
    // The next period holds, before its boundary, what the rate now takes
    // a range to be: its first range was taken up to two minutes early,
    // perhaps at no rate yet.
    const SequenceBufferState buffered = slot->entry.buffer.state();
    const bool top_up = ahead && state.last_size > 0 &&
                        buffered.current_left + buffered.queued < next_size(state, ps.rate) / 2;
    const auto fetches = slot->entry.gauges.fetches.load(std::memory_order_relaxed);
    supply(slot->entry, state, top_up);
    took = took || slot->entry.gauges.fetches.load(std::memory_order_relaxed) != fetches;
  }
  // A request that waited for the tag before its period was there.
  if (took) parent.waiting.wake_all();
}

Result<std::optional<std::int64_t>, CoordError> SequenceSupplier::probe_zookeeper_clock() {
  const auto sent = BootClock::now();
  auto zk_now = zk_->time_of_probe(tree::time_probe_prefix(options_.root));
  if (!zk_now) return CoordError::from(zk_now.error());
  if (zk_now.value()) {
    registry_.zookeeper_clock.saw(sent, BootClock::now(), *zk_now.value());
  } else {
    registry_.zookeeper_clock.trust_wall_clock_alone();
    if (!probe_refused_warned_) {
      probe_refused_warned_ = true;
      spdlog::warn(
          "sequences: ZooKeeper refuses this daemon's clock probe (its ACL): a period is judged "
          "by this daemon's clock without ZooKeeper's word");
    }
  }
  return zk_now.value();
}

std::optional<std::int64_t> SequenceSupplier::agreeing_wall_ms() {
  ZooKeeperClock& zookeeper_clock = registry_.zookeeper_clock;
  const auto seen = zookeeper_clock.read();
  const auto steady = BootClock::now();
  // Read again when none was seen lately, and while our clock seems off
  // (every 5 s): ZooKeeper's own clock may have been the one stepped, or
  // the stamp read before a suspend that BootClock did not count.
  const bool stale = !seen || seen->age > kZooKeeperClockMaxAge || clock_off_warned_;
  if (stale && steady >= clock_probe_at_) {
    clock_probe_at_ = steady + (clock_off_warned_ ? 5 * kPeriodRetry : kPeriodRetry);
    auto probed = probe_zookeeper_clock();
    if (!probed) {
      failed(probed.error(), "cannot read ZooKeeper's clock");
    } else if (!probed.value()) {
      clock_probe_at_ = steady + kZooKeeperClockMaxAge;  // its ACL refuses: not once a second
    } else {
      // A request that waited for the clock to be checked.
      for (const auto& [tag, ps] : periodics_) {
        if (SequenceEntry* parent = entry_of(tag)) parent->waiting.wake_all();
      }
    }
  }
  std::int64_t off_ms = 0;
  // Read after the probe: judged against ZooKeeper's clock at this instant.
  const std::int64_t now = wall_ms();
  switch (zookeeper_clock.judge(now, BootClock::now(), &off_ms)) {
    case ZooKeeperClock::Judged::within:
      if (clock_off_warned_) {
        clock_off_warned_ = false;
        spdlog::info("sequences: the wall clock agrees with ZooKeeper's again: periods served");
      }
      return now;
    case ZooKeeperClock::Judged::unknown:
      return std::nullopt;
    case ZooKeeperClock::Judged::off:
      if (!clock_off_warned_) {
        clock_off_warned_ = true;
        spdlog::error(
            "sequences: the wall clock is {} ms off ZooKeeper's as last seen (more than "
            "coordinator.max_skew_ms {}): no period is opened or served by it until it is back "
            "(503 clock_skew)",
            off_ms, zookeeper_clock.max_skew_ms());
      }
      return std::nullopt;
  }
  return std::nullopt;
}

void SequenceSupplier::open_period(SequenceEntry& parent, PeriodicState& ps, const Period& p) {
  const std::string name = period_tag(parent.tag, p.key);
  if (period_slots_.contains(name)) return;
  PeriodicSequence& seq = *parent.periodic.load(std::memory_order_relaxed);
  // Held (closed, or let go of), or older than both held: over here.
  if (!seq.installable(p)) return;
  // Not over a connection in its restore grace: a ZooKeeper that lost its
  // data is noticed within it (and everything frozen here). Then the
  // definition is read now, not as cached: one made again after a loss
  // (frozen) has the version the cached one had, so the multi's check
  // alone would pass against it and make the period from its start.
  if (held_for_grace(BootClock::now())) {
    ps.retry_at = BootClock::now() + kPeriodRetry;
    return;
  }
  if (!read_definition(parent.tag, ps)) return;
  auto made = make_period(*zk_, options_.root, parent.tag, ps.definition, p.key);
  if (!made) {
    ps.retry_at = BootClock::now() + kPeriodRetry;
    failed(made.error(), fmt::format("cannot make period {} of \"{}\"", p.key, parent.tag));
    return;
  }
  switch (made.value()) {
    case PeriodMade::definition_moved:
      ps.definition_stale = true;  // read again and made on the next pass
      registry_.request_refill();
      return;
    case PeriodMade::frozen:
      // The definition is frozen (ZooKeeper lost some history): the tag's
      // floor child is watched, and a raise thaws it here (check_floor).
      ps.definition_stale = true;
      check_floor(parent, tags_[parent.tag]);
      return;
    case PeriodMade::removed:
      if (PeriodSlot* slot = seq.install(p)) slot->closed.store(true, std::memory_order_release);
      parent.waiting.wake_all();
      spdlog::warn("sequences: \"{}\": period {} was removed (past its retention): not served",
                   parent.tag, p.key);
      return;
    case PeriodMade::made:
    case PeriodMade::there:
      break;
  }
  PeriodSlot* slot = seq.install(p);
  if (!slot) return;  // older than both held: over here
  period_slots_[name] = slot;
  // A bounded period's first range is an eighth of it at most, like the
  // rest (tags_: the first daemon at a high rate would take it all).
  const SequenceNode& d = ps.definition.node;
  tags_[name].left_in_node = d.end == kSequenceMax ? -1 : d.end - d.next;
  slot->entry.wanted.store(true, std::memory_order_release);
  parent.waiting.wake_all();
  spdlog::info("sequences: \"{}\": period {} {} ({} made it)", parent.tag, p.key,
               p.begins_ms > wall_ms() ? "is ready before it begins" : "is served",
               made.value() == PeriodMade::made ? "this daemon" : "another daemon");
}

void SequenceSupplier::let_go_of_over_periods() {
  // What a period let go of (or found removed) left here: nothing of it is
  // held, owed or recorded any more (a daemon runs for years: a day each).
  std::erase_if(tags_, [this](const auto& t) {
    const std::string& name = t.first;
    return name.find('@') != std::string::npos && !period_slots_.contains(name) &&
           !restore_owed_.contains(name) && !record_.tags.contains(name);
  });
  const std::int64_t now = wall_ms();
  const auto let_go_at = [this](const std::string& name, const Period& p) {
    return p.ends_ms + options_.max_skew.count() +
           let_go_margin_ms(options_.run, name, options_.max_skew.count());
  };
  std::vector<std::string> over;
  for (const auto& [name, slot] : period_slots_) {
    const Period& p = slot->period;
    if (p.ends_ms == INT64_MAX || restore_owed_.contains(name)) continue;
    if (now > let_go_at(name, p)) over.push_back(name);
  }
  const auto steady = BootClock::now();
  if (over.empty() || steady < let_go_confirm_at_ || !zk_ || !zk_->connected()) return;
  // Our clock says over. A clock stepped forward (NTP, a VM resumed) says
  // so early, before the coordinator's next heartbeat holds it for skew;
  // let go of then, the period would be closed here for good and answered
  // period_closed once the clock is stepped back. ZooKeeper's clock
  // confirms (one probe a period, once it is over).
  auto zk_now = probe_zookeeper_clock();
  if (!zk_now) {  // cut off, or the root gone (a wipe): looked at again in a while
    failed(zk_now.error(), "cannot read ZooKeeper's clock");
    let_go_confirm_at_ = steady + 5 * kPeriodRetry;
    return;
  }
  // Refused a probe: our clock alone (the coordinator holds for skew).
  const std::int64_t zk_ms = zk_now.value() ? *zk_now.value() : now;
  std::int64_t soonest = INT64_MAX;
  for (const auto& name : over) {
    const std::int64_t due = let_go_at(name, period_slots_.at(name)->period);
    if (zk_ms <= due) {
      soonest = std::min(soonest, due - zk_ms);
      if (!held_past_end_.insert(name).second) continue;  // said once
      spdlog::warn(
          "sequences: period \"{}\" is over by this daemon's clock but not by ZooKeeper's "
          "(this clock is {} ms ahead of it): held until it is",
          name, now - zk_ms);
      continue;
    }
    forget_period(name);
    tags_.erase(name);
    held_past_end_.erase(name);
  }
  // Looked at again when ZooKeeper's clock gets there (10 s at most: it
  // may be stepped too).
  if (soonest != INT64_MAX) {
    let_go_confirm_at_ =
        steady + std::chrono::milliseconds(std::clamp<std::int64_t>(soonest + 1, 1000, 10'000));
  }
}

void SequenceSupplier::forget_period(const std::string& name) {
  if (const auto slot = period_slots_.find(name); slot != period_slots_.end()) {
    slot->second->closed.store(true, std::memory_order_release);
    slot->second->entry.buffer.close();
    slot->second->entry.waiting.wake_all();
    period_slots_.erase(slot);
  }
  if (record_.tags.erase(name) > 0) record_written_ = false;
  spdlog::info("sequences: period \"{}\" is over: let go of", name);
}

std::optional<bool> SequenceSupplier::removed_period(const std::string& name) {
  const auto at = name.find('@');
  if (at == std::string::npos) return false;
  const auto ps = periodics_.find(std::string_view(name).substr(0, at));
  if (ps == periodics_.end()) return false;
  auto read = read_sequence(*zk_, options_.root, name.substr(0, at));
  if (!read) {
    // The definition gone too: ZooKeeper lost it (nothing deletes one).
    if (read.error().code == CoordErrc::no_sequence) return false;
    failed(read.error(), fmt::format("cannot read the definition of \"{}\"", name.substr(0, at)));
    return std::nullopt;
  }
  ps->second.definition = std::move(read).value();
  ps->second.definition_stale = false;
  const std::string& through = ps->second.definition.node.removed_through;
  if (through.empty() || name.substr(at + 1) > through) return false;
  forget_period(name);
  return true;
}

void SequenceSupplier::remove_old_periods(const PeriodicSequence& seq, PeriodicState& ps,
                                          const Period& current) {
  // The periods kept before the clock's, each with the ZooKeeper time from
  // which it may go; keys of one rule sort as their dates.
  std::vector<std::pair<std::string, std::int64_t>> kept;
  for (const auto& key : ps.listed_keys) {
    if (key >= current.key) continue;
    if (const auto p = seq.rule().period_of_key(key)) {
      kept.emplace_back(
          key, removable_after_ms(*p, ps.definition.node.retention_s, options_.max_skew.count()));
    }
  }
  ps.removal_looked_in = current.key;
  ps.removal_next_ms = INT64_MAX;  // until the listing or the period changes, or one is due
  if (kept.empty()) return;
  std::int64_t first_due = INT64_MAX;
  for (const auto& k : kept) first_due = std::min(first_due, k.second);
  // Our clock only says when to ask ZooKeeper's.
  if (wall_ms() < first_due) {
    ps.removal_next_ms = first_due;
    return;
  }
  if (!remove_due_periods(seq, ps, kept)) {
    ps.removal_next_ms = wall_ms() + 1000;  // again soon
  }
}

bool SequenceSupplier::remove_due_periods(
    const PeriodicSequence& seq, PeriodicState& ps,
    const std::vector<std::pair<std::string, std::int64_t>>& kept) {
  // ZooKeeper's own clock decides (a probe's ctime), never ours: a daemon
  // whose clock runs ahead removes nothing early (model/period.pml).
  auto zk_now = probe_zookeeper_clock();
  if (!zk_now || !zk_now.value()) {
    if (!zk_now) failed(zk_now.error(), "cannot read ZooKeeper's clock");
    return false;
  }
  std::int64_t next = INT64_MAX;
  for (const auto& [key, after] : kept) {
    if (after > *zk_now.value()) {
      next = std::min(next, after);
      continue;
    }
    if (ps.definition_stale && !read_definition(seq.tag(), ps)) return false;
    const std::string& through = ps.definition.node.removed_through;
    if (!through.empty() && key <= through) continue;  // another daemon removed it
    auto removed = remove_period(*zk_, options_.root, seq.tag(), ps.definition, key);
    ps.definition_stale = true;  // our write (or another's) moved it
    if (!removed) {
      failed(removed.error(), fmt::format("cannot remove period {} of \"{}\"", key, seq.tag()));
      return false;
    }
    if (!removed.value()) return false;  // moved: read again, next time
    spdlog::info("sequences: \"{}\": period {} removed (past its retention)", seq.tag(), key);
  }
  // When the next is due, on our clock, as ZooKeeper's runs (ours may be
  // ahead of it). Due within minutes: looked at again within 10 s, should
  // ZooKeeper's clock be stepped meanwhile (one probe each).
  if (next != INT64_MAX) {
    const std::int64_t wait = next - *zk_now.value();
    ps.removal_next_ms = wall_ms() + (wait > 600'000 ? wait : std::min<std::int64_t>(wait, 10'000));
  } else {
    ps.removal_next_ms = INT64_MAX;
  }
  return true;
}

}  // namespace snowflake::coord
