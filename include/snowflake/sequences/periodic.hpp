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
// leaves it when a newer one is installed, and is kept alive (a request may
// still hold it) but never found again.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "snowflake/sequences/number_template.hpp"
#include "snowflake/sequences/period.hpp"
#include "snowflake/sequences/registry.hpp"

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

  // Any thread, lock-free: the slot of the period `now_ms` is in, or
  // nullptr when that period is not (or no longer) taken up here.
  PeriodSlot* slot_at(std::int64_t now_ms) const noexcept;

  // The supplier's thread: period `p`'s slot, installed if it is new. A
  // period older than both in the lookup is not installed (nullptr): it
  // is over here.
  PeriodSlot* install(const Period& p);
  // The supplier's thread: whether install(p) would install a new slot
  // (not held, and newer than one of the two held).
  bool installable(const Period& p) const;
  // Any thread: the clock's period is older than every slot held (a clock
  // stepped back past them): that period is over here.
  bool before_held(const Period& p) const noexcept;
  // Any thread: the slots in the lookup, newest first.
  std::vector<PeriodSlot*> live() const;

 private:
  bool holds(const PeriodSlot* s, std::int64_t now_ms) const noexcept;

  const std::string tag_;
  const PeriodRule rule_;
  const NumberTemplate template_;
  std::atomic<PeriodSlot*> newest_{nullptr};
  std::atomic<PeriodSlot*> previous_{nullptr};
  std::deque<std::unique_ptr<PeriodSlot>> owned_;  // the supplier's; never freed while it runs
};

}  // namespace snowflake
