#pragma once
// Keeps this daemon's sequences supplied with ranges, on a thread of its own,
// so the request path never waits on ZooKeeper while a range is buffered
// (sequence_buffer.hpp). Its requests go over the coordinator's ZooKeeper
// session when the daemon has one (shared_session: one session and one
// connection a daemon, so its pings are paid once), else over a session of
// its own.
//
// It watches <root>/sequences (or, until `seq create` makes it, for it): a
// tag created while the daemon runs is served at once. It writes nothing
// until a request asks for a range. A tag's first range is taken when a request first asks for it
// (none is taken, and none left as a gap, for tags nobody asks this daemon
// for); after that the next range is fetched in the background once a share
// of the current one is used, sized by the rate (sequence_sizing.hpp).
//
// A sequence needs no lease: a range written as ours is ours for good. Cut
// off from ZooKeeper, the daemon goes on handing out what it holds, and
// keeps trying to reconnect (a new session whenever the old one is gone).
// At a clean stop the buffers close first, then each tag's unused rest is
// given back when it is still the newest range taken.
//
// What this run holds is in its holder node (sequence_holders.hpp), written
// before a range joins the buffer. It watches the floor child of each tag
// it holds (sequence_ranges.hpp), which takes do not write: another
// daemon's take costs it no request. When `seq raise` lifts a floor (2
// reads: the child's watch set again, the node read), the buffer drops its
// numbers through it, then the holder node says so. A taken range joins the
// buffer only after the holder node names it and the tag's floor was read
// again (the child's watch set, then the node read): `seq raise` writes the
// floor, then reads the holder nodes, so whichever of the two writes
// ZooKeeper orders first, one side sees the other's. An exhausted tag also
// watches its node, which a give-back writes.
//
// ZooKeeper may lose what it acknowledged (a wipe, a restore of an older
// copy: cluster_history.hpp). Then a range of ours may be taken again by a
// daemon that reads the restored counter, so at the first sign (a tag we
// hold gone or behind our range, a write answered from an older history, or
// the coordinator's report) every buffer is dropped and every tag frozen
// (503 sequence_frozen), here at once and in ZooKeeper as soon as it
// answers: a tag we held is made again, or raised, to the end of our range,
// frozen; the holder node says what we had handed out. A frozen tag thaws
// when `seq raise` lifts it, once the cluster is fenced.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/cluster/cluster_history.hpp"
#include "snowflake/cluster/restore_grace.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/sequences/periodic.hpp"
#include "snowflake/sequences/registry.hpp"
#include "snowflake/sequences/sizing.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct SequenceSupplierOptions {
  ZkSettings zookeeper;
  std::string root;
  std::string run;    // this run's instance token: the nonces' prefix, its holder node's name
  std::string owner;  // who runs it, for people ("host:port pid N")
  // The run before this one from the same state directory, whose lock proves
  // it over: its holder node is deleted (it holds nothing any more).
  std::optional<std::string> previous_run{};
  SequenceSizing sizing{};
  // How often the thread looks at the buffers when no request asks it to.
  std::chrono::milliseconds period{100};
  // The longest wait between two reconnection attempts.
  std::chrono::milliseconds max_backoff{2000};
  // How often the holder node's buffer figures are written again for `seq
  // list` (besides each range taken and each floor dropped through).
  std::chrono::milliseconds publish_period{60000};
  // coordinator.max_skew_ms: how far apart daemons' clocks may be, which a
  // period's end waits out before its node is left or removed.
  std::chrono::milliseconds max_skew{2000};
  // What the daemon knows of its cluster's history: losses are reported to
  // it and read from it. The coordinator's, which fences the cluster and
  // settles a loss; in static mode the daemon's own (settles_history).
  ClusterHistory* history = nullptr;
  // No coordinator (static mode): on a loss this supplier itself freezes
  // every sequence of the cluster in ZooKeeper, then settles the history,
  // as the coordinator does with its fence (DESIGN.md rule 9: every mode).
  bool settles_history = false;
  // A range taken over a ZooKeeper connection younger than this is handed
  // out only once the connection is this old and the tag's node has been
  // read again (coordinator.restore_grace_ms: a restored ZooKeeper's
  // sequences are frozen before a range from its old counter goes out).
  std::chrono::milliseconds restore_grace{0};
  // The coordinator's session (Coordinator::session), if the daemon has a
  // coordinator: used instead of a session of our own. It may answer
  // nullptr (none yet, or being replaced); a session of it that is gone is
  // waited out until the coordinator has made the next, never replaced here.
  std::function<std::shared_ptr<ZkSession>()> shared_session{};
  // Strict sequences (strict_owner.hpp): this daemon as an owner names
  // itself (the coordinator's held worker ID, its node, its run's token, and
  // `address`, where this daemon's HTTP API answers); nullopt while it holds
  // none, and always without a coordinator: such a daemon owns none.
  std::function<std::optional<StrictOwner>()> owner_identity{};
  // The worker-ID lease an owner hands out under (nullptr: owns none).
  const Lease* lease = nullptr;
  // coordinator.reclaim_after_ms: how long after its last heartbeat an
  // owner's tags may be taken over, its lease over for good by then.
  std::chrono::milliseconds reclaim_after{900'000};
  std::chrono::milliseconds safety_margin{60'000};  // coordinator.safety_margin_ms
  // A tag with no owner is claimed at once by the daemon ranked first for
  // it, by the one ranked r-th after r times this (the first one gone).
  std::chrono::milliseconds claim_stagger{1000};
};

class SequenceSupplier {
 public:
  SequenceSupplier(SequenceSupplierOptions options, SequenceRegistry& registry);
  ~SequenceSupplier();
  SequenceSupplier(const SequenceSupplier&) = delete;
  SequenceSupplier& operator=(const SequenceSupplier&) = delete;

  // Starts the thread; it connects on its own (a ZooKeeper that does not
  // answer yet delays sequences, not the daemon's start).
  void start();
  // Closes every buffer (nothing more is handed out), gives back the unused
  // rests it can, closes the session and joins the thread.
  void stop();

  // Connected to ZooKeeper right now (also in the registry, for /status).
  bool connected() const noexcept { return registry_.connected.load(std::memory_order_relaxed); }
  // The requests its ZooKeeper sessions have sent so far, closed ones
  // included (ZkSession::requests_sent): what serving its tags costs. Over
  // a shared session, the coordinator's requests are counted too.
  std::uint64_t requests_sent() const;

 private:
  struct TagState {
    RateMeter meter;
    std::int64_t last_size = 0;  // the last range taken; 0: none yet
    // The end of the last range taken since the last loss (0: none): a
    // range that starts below it comes from a counter ZooKeeper rolled
    // back. Not the holder record's `to`: what a loss froze was dropped
    // whole, and a raise may then start the counter below it.
    std::int64_t taken_to = 0;
    std::int64_t dropped_through = 0;  // the highest floor the buffer dropped through
    // Taken over a connection still in its grace: not in the buffer yet.
    std::optional<SequenceRange> settling;
    // The highest floor the buffer dropped through that the holder node
    // does not say yet: said once the replies from before the drop are
    // written (RepliesInFlight). The holder node's `from` moves up the same
    // way: to the buffer's first unused number as read before a drain (a
    // reply in flight may hold a lower one). `draining`: what waits.
    struct Drain {
      std::int64_t floor = 0;
      std::optional<std::int64_t> from{};
    };
    std::int64_t to_acknowledge = 0;
    std::optional<Drain> draining{};
    // The node, as last read, has no number left to take; a range just
    // taken is on its way into the buffer (not exhausted here until it is in).
    bool node_exhausted = false;
    bool joining = false;
    // Its template and end as last taken from (a node made again after a
    // loss of ZooKeeper's data is made like it); the template is known
    // (and fixed here) from the first range on.
    SequenceNode shape{};
    bool shape_known = false;
    bool shape_conflict = false;  // the node's template changed: nothing more is taken
    // A bounded sequence (--max): the numbers its node had left after our
    // last take (-1: unbounded, or not taken yet). A range is at most an
    // eighth of it, so the daemons share a period's (or a tag's) last
    // numbers instead of one taking all at a high rate.
    std::int64_t left_in_node = -1;
    // A period's entry, new: the rate of the period before, which sizes its
    // ranges until its own meter has measured one (0: none).
    double rate_hint = 0;
  };

  // A sequence that restarts each period (sequences/periodic.hpp): its
  // definition as last read; the periods' nodes the listing shows (what
  // the removal looks at); when to try again after a refusal.
  struct PeriodicState {
    SequenceRead definition;
    bool definition_stale = false;  // it moved (a removal, a raise): read before the next make
    std::set<std::string> listed_keys;
    // When the removal looks next (our clock; 0: at the next pass): when
    // the oldest period kept may be due. A listing that changed resets it,
    // and so does a new period (the one before joins those kept).
    std::int64_t removal_next_ms = 0;
    std::string removal_looked_in;  // the period the clock was in then
    BootClock::time_point retry_at{};
    double rate = 0;  // numbers a second of the period the clock was in, once measured
  };

  // sequence_strict.cpp: strict sequences (strict_owner.hpp). Their
  // owner records listed (and the directory watched), each tag marked strict
  // here; each record read (and watched); a tag claimed when it has no
  // owner and we rank first for it (or the ones before us did not), taken
  // over once its owner's lease is over for good by ZooKeeper's records;
  // supplied only while ours, within the lease run we read it ours in.
  struct StrictState {
    OwnerRead read;
    bool read_owed = true;              // its watch fired, a new session, or a claim landed
    std::uint64_t read_generation = 0;  // the lease's run when it was read
    BootClock::time_point look_at{};    // when another's (or nobody's) is judged again
    std::optional<BootClock::time_point> unowned_since{};
    // Its node says strict and its owner record is gone (a loss, or a hand):
    // nobody may claim it (a claim never makes a record: who held it last,
    // and until when, is not known), so nothing is read or tried for it
    // until the owners' listing, watched, shows a record again.
    bool record_missing = false;
  };
  void list_strict_tags();
  // Its node says strict and its record is gone: refused, and left alone.
  void mark_record_missing(const std::string& tag, StrictState& ss);
  void supply_strict(SequenceEntry& entry, TagState& state);
  // `generation`: the lease's run, noted before this daemon's identity
  // was (a worker ID lost and another taken meanwhile moves it).
  bool read_owner(SequenceEntry& entry, StrictState& ss, std::uint64_t generation);
  // Claimed if nobody owns it and our turn came, or taken over if the
  // owner's lease is over for good; else the next look is scheduled.
  void try_to_own(SequenceEntry& entry, StrictState& ss, const StrictOwner& me);
  // The claim's position for a tag with no owner: how long after it was
  // first seen without one we claim it (0 when we rank first for it).
  std::optional<std::chrono::milliseconds> claim_delay(const std::string& tag,
                                                       std::uint32_t worker_id);
  // Not ours (any more): nothing more handed out here, and what the buffer
  // held dropped (a gap: another owner takes above it).
  void disown(SequenceEntry& entry);
  // Every number of the tag this run took dropped from its buffer.
  void drop_held(SequenceEntry& entry);
  // The record as last read names this run (claimed, maybe not confirmed).
  bool named_owner(const SequenceEntry& entry) const;
  // At a clean stop: the rest given back and the record released in one
  // multi, so the next owner starts where we stopped. False: not released.
  bool release_strict(SequenceEntry& entry, std::optional<std::int64_t> first_unused);
  void run();
  // sequence_segments.cpp: the segments other processes asked for
  // (registry_.segments), each taken and answered, or refused.
  void serve_segments();
  SegmentCall::Outcome take_segment(const std::string& tag, std::int64_t step);
  // The tag's entry, if a segment of it may be taken now (else why not).
  std::variant<SequenceEntry*, SegmentRefusal> segment_entry(const std::string& tag);
  // A take refused: what the caller is told (and learned as a buffer's take would).
  SegmentRefusal segment_refused(SequenceEntry& entry, TagState& state, const CoordError& e);
  // Every entry it supplies: the registry's tags and the periods' slots.
  std::vector<SequenceEntry*> supplied_entries() const;
  // A tag's entry, or a period's ("<tag>@<key>") while it holds one.
  SequenceEntry* entry_of(std::string_view tag) const;
  // sequence_periods.cpp. The definition of `parent` read and its
  // PeriodicSequence set: its periods are served from now on.
  void learn_periodic(SequenceEntry& parent);
  // A periodic tag's pass: the clock's period made and installed, the next
  // one too once its boundary is near (its first range taken before it),
  // each supplied like a tag; periods over on every clock let go, and
  // those past their retention removed.
  void supply_periodic(SequenceEntry& parent);
  // A take refused: a periodic tag learned, a frozen, exhausted or gone
  // one judged by its floor (check_floor), anything else retried.
  void take_refused(SequenceEntry& entry, TagState& state, const CoordError& e);
  void open_period(SequenceEntry& parent, PeriodicState& ps, const Period& p);
  // The wall clock now, if it agrees with ZooKeeper's as last seen
  // (ZooKeeperClock): periods are opened and supplied by it only then.
  // Reads ZooKeeper's clock first when none was seen lately (static mode,
  // or no heartbeat for kZooKeeperClockMaxAge) or ours seemed off.
  std::optional<std::int64_t> agreeing_wall_ms();
  // ZooKeeper's clock now, by a probe, also told to the registry's
  // ZooKeeperClock; nullopt inside: its ACL refuses the probe.
  Result<std::optional<std::int64_t>, CoordError> probe_zookeeper_clock();
  bool read_definition(const std::string& tag, PeriodicState& ps);
  // Periods over on every clock within the skew bound (and a margin), by
  // ours and by ZooKeeper's: let go of (their holder entries too), before
  // anyone may remove them.
  void let_go_of_over_periods();
  void remove_old_periods(const PeriodicSequence& seq, PeriodicState& ps, const Period& current);
  bool remove_due_periods(const PeriodicSequence& seq, PeriodicState& ps,
                          const std::vector<std::pair<std::string, std::int64_t>>& kept);
  // A period's node gone though we held it: true if its removal after the
  // retention (the definition says so: not a loss; it is let go), false if
  // lost; nullopt: the definition could not be read.
  std::optional<bool> removed_period(const std::string& name);
  // Nothing more of the period is handed out or held here (its slot closed).
  void forget_period(const std::string& name);

  bool ensure_session();
  // zk_ closed, its requests counted (zk_ changes under session_mutex_).
  void end_session();
  // A new session in zk_: its watches, the tags to list and check again.
  void adopt(std::shared_ptr<ZkSession> session);
  // ensure_session() over the coordinator's session.
  bool take_up_shared_session();
  // A loss of the cluster's history reported since the last look: every
  // buffer dropped and every tag frozen here, at once; ZooKeeper is told
  // (restore_held) when it answers.
  void freeze_on_loss();
  // What a loss owes ZooKeeper: each tag we held made again (or raised) to
  // the end of our range, frozen, and our holder node saying what we had.
  // Each tag leaves restore_owed_ once done. False: something is still owed.
  bool restore_held();
  void report_loss(HistoryLoss kind, std::string detail);
  // settles_history: an open loss, once restore_held owes nothing, ends
  // with every sequence of the cluster frozen in ZooKeeper (cluster fence's
  // freeze), so that a daemon that never held them hands none out either.
  void settle_loss_alone();
  // Every frozen tag's floor checked (and its watch set) on the next pass:
  // after a loss froze them, a new session, or the loss settled.
  void recheck_frozen();
  // recheck_frozen() once the history's open loss is settled.
  void recheck_when_settled();
  // A write of ours is in, and the session has seen it: false (and the
  // loss reported) if its zxid is not above `before`.
  bool history_follows(std::int64_t before, std::string_view what);
  void list_tags();
  // A range taken in the grace, once the grace is over: the node read again,
  // then into the buffer, or dropped (a gap) if the tag is frozen now.
  // False: still waiting (or the node could not be read).
  bool settle(SequenceEntry& entry, TagState& state);
  // A range whose node read was sent at `read_at` waits if that read went
  // out before the grace of the connection that answered it was over
  // (restore_grace.hpp).
  bool held_for_grace(BootClock::time_point read_at);
  void forget_previous_run();
  // Watches the tag's floor child, then reads the tag's node again (watching
  // it only while the tag is exhausted): a floor above what the buffer
  // dropped through is dropped through now. False: not read.
  bool check_floor(SequenceEntry& entry, TagState& state);
  // The tags whose node changed (their watch fired), checked.
  void check_changed_floors();
  // The entry's exhausted flag: nothing left to take, and no range of ours
  // on its way into the buffer (joining, or settling through the grace).
  void update_exhausted(SequenceEntry& entry, const TagState& state);
  // The buffer dropped through `floor`: the holder node says so once every
  // reply reserved before has been written (acknowledge_drops).
  void dropped(TagState& state, std::int64_t floor);
  // Each tag's drop (and new `from`) whose replies from before are all
  // written, into record_; a drop is published by the caller, a `from` with
  // the next write.
  void acknowledge_drops();
  // The registry's ZooKeeper flag; requests waiting for a range are woken
  // when it falls (none will come).
  void set_connected(bool connected);
  // `top_up`: take a range now even if the buffer would not ask yet (a
  // period ahead of its boundary, whose first range was sized before any
  // rate was known).
  void supply(SequenceEntry& entry, TagState& state, bool top_up = false);
  // Whether supply() takes a range now: asked for, not frozen nor
  // exhausted, the buffer low (or `top_up`), ZooKeeper connected.
  bool wants_range(const SequenceEntry& entry, const TagState& state,
                   const SequenceBufferState& buffered, bool top_up) const;
  // The next range's size: by the rate, at most an eighth of what a
  // bounded node had left.
  std::int64_t next_size(const TagState& state, double rate) const;
  // The tag's template and end, from the node a range was taken from: the
  // entry prints its numbers with the template from then on. False: the
  // node's template is not the one this daemon prints with (the range is a gap).
  bool learn_shape(SequenceEntry& entry, TagState& state, const SequenceNode& node);
  // The holder node written as record_ stands, its figures brought up to
  // date first. False: not written.
  bool publish();
  void publish_if_due();
  void give_back_all();
  // Logs and counts a ZooKeeper failure; a session that is gone is replaced at the next look.
  void failed(const CoordError& e, const std::string& what);

  const SequenceSupplierOptions options_;
  SequenceRegistry& registry_;
  SequenceTaker taker_;
  SequenceTaker segment_taker_;  // "<run>.segments": never given back at a clean stop
  std::shared_ptr<ZkSession> zk_;
  int watcher_id_ = 0;  // our node watcher on zk_
  RestoreGrace grace_;
  RefusedSessionWatch refusal_watch_;
  std::map<std::string, TagState, std::less<>> tags_;  // the thread's own
  std::map<std::string, PeriodicState, std::less<>> periodics_;
  std::map<std::string, StrictState, std::less<>> stricts_;
  std::atomic<bool> relist_strict_{true};   // the owners' directory changed (or a new session)
  std::atomic<bool> alive_changed_{false};  // a watched owner's alive node came or went
  // The periods' slots it supplies, by "<tag>@<key>" (a period is let go
  // of once over on every clock; the slot lives on, its buffer closed).
  std::map<std::string, PeriodSlot*, std::less<>> period_slots_;
  // When a period over by our clock is next checked against ZooKeeper's.
  BootClock::time_point let_go_confirm_at_{};
  std::set<std::string> held_past_end_;  // over by our clock, not ZooKeeper's: said so once
  bool probe_refused_warned_ = false;
  BootClock::time_point clock_probe_at_{};  // the next probe of ZooKeeper's clock, at the soonest
  bool clock_off_warned_ = false;           // "the wall clock is off": said once an episode
  std::atomic<bool> relist_{true};          // the children watch fired (or a new session)
  HolderRecord record_;                     // what the holder node says, once written
  bool record_written_ = false;             // record_ as it stands is in ZooKeeper
  BootClock::time_point last_publish_{};
  bool previous_forgotten_ = false;
  std::mutex changed_mutex_;
  std::set<std::string> changed_tags_;    // under changed_mutex_: set by the watcher
  std::set<std::string> owners_changed_;  // under changed_mutex_: their owner record changed
  std::atomic<bool> stopping_{false};
  std::chrono::milliseconds backoff_{0};
  std::uint64_t episodes_handled_ = 0;
  // The ranges held when a loss was seen, until each tag is frozen in
  // ZooKeeper above its range and the holder node says so (restore_held):
  // those tags stay frozen here until then. Taken at the loss, not later: a
  // range taken once it is settled comes from the cluster as it stands.
  std::map<std::string, HeldSequence, std::less<>> restore_owed_;
  bool restore_publish_owed_ = false;  // the holder node written since the loss
  bool history_was_open_ = false;      // options_.history->open() at the last pass
  // zk_ is the thread's; it is replaced under session_mutex_, which
  // requests_sent() takes to read it from other threads.
  mutable std::mutex session_mutex_;
  std::uint64_t requests_of_ended_ = 0;  // under session_mutex_: of the sessions closed
  std::thread thread_;
};

}  // namespace snowflake::coord
