#include "snowflake/sequences/periodic.hpp"

#include <algorithm>

namespace snowflake {

PeriodicSequence::PeriodicSequence(std::string tag, PeriodRule rule, NumberTemplate number_template)
    : tag_(std::move(tag)), rule_(std::move(rule)), template_(std::move(number_template)) {}

bool PeriodicSequence::holds(const PeriodSlot* s, std::int64_t now_ms) const noexcept {
  if (!s || now_ms < s->period.begins_ms || now_ms >= s->period.ends_ms) return false;
  if (now_ms >= s->sure_from_ms && now_ms < s->period.next_begins_ms) return true;
  // Where a step back brings the previous period back, or this one back
  // after the next began: the clock's own period decides.
  return rule_.period_at(now_ms).key == s->period.key;
}

PeriodSlot* PeriodicSequence::slot_at(std::int64_t now_ms, const Hold& /*held*/) const noexcept {
  PeriodSlot* newest = newest_.load(std::memory_order_acquire);
  if (holds(newest, now_ms)) return newest;
  PeriodSlot* previous = previous_.load(std::memory_order_acquire);
  if (holds(previous, now_ms)) return previous;
  return nullptr;
}

bool PeriodicSequence::installable(const Period& p) const {
  const PeriodSlot* newest = newest_.load(std::memory_order_relaxed);
  const PeriodSlot* previous = previous_.load(std::memory_order_relaxed);
  for (const PeriodSlot* s : {newest, previous}) {
    if (s && s->period.key == p.key) return false;
  }
  return !newest || !previous || p.key > newest->period.key || p.key > previous->period.key;
}

bool PeriodicSequence::before_held(const Period& p, const Hold& /*held*/) const noexcept {
  const PeriodSlot* newest = newest_.load(std::memory_order_acquire);
  const PeriodSlot* previous = previous_.load(std::memory_order_acquire);
  return newest && previous && p.key < newest->period.key && p.key < previous->period.key;
}

PeriodSlot* PeriodicSequence::install(const Period& p) {
  PeriodSlot* newest = newest_.load(std::memory_order_relaxed);
  PeriodSlot* previous = previous_.load(std::memory_order_relaxed);
  for (PeriodSlot* s : {newest, previous}) {
    if (s && s->period.key == p.key) return s;
  }
  const bool newer_than_newest = !newest || p.key > newest->period.key;
  const bool newer_than_previous = !previous || p.key > previous->period.key;
  if (!newer_than_newest && !newer_than_previous) return nullptr;  // over here
  // Sure from where the previous period can no longer come back.
  const std::int64_t sure = std::max(p.begins_ms, rule_.period_at(p.begins_ms - 1).ends_ms);
  owned_.push_back(std::make_unique<PeriodSlot>(p, template_.fill(p), tag_ + "@" + p.key, sure));
  PeriodSlot* made = owned_.back().get();
  if (newer_than_newest) {
    previous_.store(newest, std::memory_order_release);
    newest_.store(made, std::memory_order_release);
  } else {
    previous_.store(made, std::memory_order_release);
  }
  return made;
}

std::vector<PeriodSlot*> PeriodicSequence::live(const Hold& /*held*/) const {
  std::vector<PeriodSlot*> out;
  for (PeriodSlot* s :
       {newest_.load(std::memory_order_acquire), previous_.load(std::memory_order_acquire)}) {
    if (s) out.push_back(s);
  }
  return out;
}

std::size_t PeriodicSequence::free_unused(const std::function<bool(const PeriodSlot*)>& in_use) {
  // The drain under way ended: no reader that began before it holds the
  // slots it covers, and every reader since looked them up after they had
  // left the lookup (it began after they left: it cannot find them).
  if (draining_ && users_.drained()) {
    draining_ = false;
    for (Retired& r : retired_) r.unreachable = r.unreachable || r.covered;
  }
  // Freed once every reply that took its numbers has been written (a reply
  // outlives its request while the server writes it; nothing can enter
  // any more).
  std::erase_if(retired_,
                [](const Retired& r) { return r.unreachable && r.slot->entry.replies.idle(); });
  const PeriodSlot* newest = newest_.load(std::memory_order_relaxed);
  const PeriodSlot* previous = previous_.load(std::memory_order_relaxed);
  for (auto s = owned_.begin(); s != owned_.end();) {
    if (s->get() == newest || s->get() == previous || in_use(s->get())) {
      ++s;
      continue;
    }
    retired_.push_back({std::move(*s), false, false});
    s = owned_.erase(s);
  }
  if (!draining_ &&
      std::any_of(retired_.begin(), retired_.end(), [](const Retired& r) { return !r.covered; })) {
    for (Retired& r : retired_) r.covered = true;
    users_.begin_drain();
    draining_ = true;
  }
  return slots_kept();
}

}  // namespace snowflake
