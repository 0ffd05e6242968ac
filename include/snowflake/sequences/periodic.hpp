#pragma once
// A sequence that restarts each period, as a daemon serves it: one slot per
// period it has taken up (the period, its template filled in, and its own
// entry: buffer, gauges, replies, named "<tag>@<key>" like its node), found
// by a request's clock without a lock. The supplier installs a period's
// slot before the period begins (the next one, ahead of the boundary), so
// at a boundary a request finds the new period's numbers already there.
//
// The lookup holds the two newest slots (the current period and the next,
// or the previous and the current just after a boundary); an older one
// leaves it when a newer one is installed and is never found again. It is
// freed once the supplier has let go of it too and no request can still
// hold it: every reader (a request, /status, /metrics) holds the slots
// (hold()) while it uses what it found, counted by epoch as replies in
// flight are (replies.hpp); the supplier frees a slot once a drain begun
// after it left the lookup has ended, and every reply that took its
// numbers has been written. A daemon that runs for years keeps the slots
// of about two periods, not one a day.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "snowflake/sequences/in_flight_token.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/sequences/period.hpp"
#include "snowflake/sequences/registry.hpp"
#include "snowflake/sequences/replies.hpp"

namespace snowflake {

struct PeriodSlot {
  PeriodSlot(const Period& p, FilledTemplate filled, std::string tag, std::int64_t sure)
      : period(p), printed(std::move(filled)), sure_from_ms(sure), entry(std::move(tag)) {}
  const Period period;
  const FilledTemplate printed;  // the template with the period's date in it
  // From here to period.next_begins_ms every instant is in this period;
  // before it (after a step back across midnight: the previous day comes
  // back), the clock's period is looked up.
  const std::int64_t sure_from_ms;
  SequenceEntry entry;  // its numbers: tag "<tag>@<key>"
  // Its node was removed (older than the retention): never served again
  // here (503 period_closed), and never made again by anyone.
  std::atomic<bool> closed{false};
};

class PeriodicSequence {
 public:
  PeriodicSequence(std::string tag, PeriodRule rule, NumberTemplate number_template);
  PeriodicSequence(const PeriodicSequence&) = delete;
  PeriodicSequence& operator=(const PeriodicSequence&) = delete;

  const std::string& tag() const noexcept { return tag_; }
  const PeriodRule& rule() const noexcept { return rule_; }
  const NumberTemplate& number_template() const noexcept { return template_; }

  // A reader's hold on the slots: what it finds while the hold lives is not
  // freed. Any thread, lock-free (two atomic adds).
  class Hold {
   public:
    Hold() = default;

   private:
    friend class PeriodicSequence;
    explicit Hold(InFlightToken t) noexcept : token_(std::move(t)) {}
    InFlightToken token_;
  };
  [[nodiscard]] Hold hold() const noexcept { return Hold(users_.enter()); }

  // Any thread, lock-free: the slot of the period `now_ms` is in, or
  // nullptr when that period is not (or no longer) taken up here.
  PeriodSlot* slot_at(std::int64_t now_ms, const Hold& held) const noexcept;

  // The supplier's thread: period `p`'s slot, installed if it is new. A
  // period older than both in the lookup is not installed (nullptr): it
  // is over here.
  PeriodSlot* install(const Period& p);
  // The supplier's thread: whether install(p) would install a new slot
  // (not held, and newer than one of the two held).
  bool installable(const Period& p) const;
  // Any thread: the clock's period is older than every slot held (a clock
  // stepped back past them): that period is over here.
  bool before_held(const Period& p, const Hold& held) const noexcept;
  // Any thread: the slots in the lookup, newest first.
  std::vector<PeriodSlot*> live(const Hold& held) const;

  // The supplier's thread, each pass: frees the slots out of the lookup
  // that `in_use` (the supplier's own map) no longer names, once no
  // reader can hold one. How many slots are kept (freed or not yet).
  std::size_t free_unused(const std::function<bool(const PeriodSlot*)>& in_use);
  std::size_t slots_kept() const noexcept { return owned_.size() + retired_.size(); }

 private:
  bool holds(const PeriodSlot* s, std::int64_t now_ms) const noexcept;

  // A slot out of the lookup and let go of: `covered` once a drain of the
  // readers began after it left; `unreachable` once that drain ended.
  struct Retired {
    std::unique_ptr<PeriodSlot> slot;
    bool covered = false;
    bool unreachable = false;
  };

  const std::string tag_;
  const PeriodRule rule_;
  const NumberTemplate template_;
  std::atomic<PeriodSlot*> newest_{nullptr};
  std::atomic<PeriodSlot*> previous_{nullptr};
  std::deque<std::unique_ptr<PeriodSlot>> owned_;  // the supplier's: installed, not retired
  std::vector<Retired> retired_;                   // the supplier's
  bool draining_ = false;                          // the supplier's: a drain of users_ is under way
  mutable RepliesInFlight users_;                  // the readers holding slots, by epoch
};

}  // namespace snowflake
