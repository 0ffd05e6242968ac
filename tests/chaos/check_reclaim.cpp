// How long a killed daemon's worker ID stays out of service (check.hpp,
// "reclaims"): per kill -9 of a daemon that was serving, the time from the
// kill to the first answer that carries its worker ID from another run:
// its own next run taking it back once the killed session has ended, or a
// standby once the reaper reclaimed it.

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "check.hpp"

namespace snowflake::chaos {

namespace {

constexpr std::int64_t kServingWithinUs = 1'000'000;  // its last answer this close to the kill

std::optional<std::uint32_t> worker_of(const Answer& a, const IdLayout& layout) {
  if (a.status != 200 || a.ids.empty() || !a.seq.empty()) return std::nullopt;
  const auto d = layout.decompose(a.ids.front().first);
  if (!d) return std::nullopt;
  return d.value().worker_id;
}

// No fault but `kill` began or lasted within [from, to]: nothing else could
// have held the worker ID up.
bool quiet(const std::vector<Fault>& schedule, const Fault& kill, std::int64_t from,
           std::int64_t to) {
  return std::none_of(schedule.begin(), schedule.end(), [&](const Fault& g) {
    return &g != &kill && g.start_us <= to && g.end_us >= from;
  });
}

}  // namespace

void check_reclaims(const History& h, const std::vector<Fault>& schedule, const IdLayout& layout,
                    const ReclaimBound& bound, CheckReport& r) {
  if (h.answers.empty()) return;
  // The last answer received: answers without times (a lease holder's IDs,
  // a plain list) come after the load's and say nothing of when it ended.
  std::int64_t history_end = 0;
  for (const Answer& a : h.answers) history_end = std::max(history_end, a.received_us);
  std::vector<std::optional<std::uint32_t>> workers;  // of each answer, once
  workers.reserve(h.answers.size());
  for (const Answer& a : h.answers) workers.push_back(worker_of(a, layout));
  for (const Fault& f : schedule) {
    if (f.kind != "kill" || f.daemon() < 0) continue;
    // What the daemon served with last, before the kill.
    std::optional<std::size_t> last;
    for (std::size_t i = 0; i < h.answers.size(); ++i) {
      const Answer& a = h.answers[i];
      if (a.daemon == f.daemon() && a.received_us <= f.start_us && workers[i] &&
          (!last || a.received_us > h.answers[*last].received_us))
        last = i;
    }
    if (!last || h.answers[*last].received_us < f.start_us - kServingWithinUs) continue;
    const Answer& killed = h.answers[*last];
    const std::uint32_t worker = *workers[*last];
    const Answer* next = nullptr;
    for (std::size_t i = 0; i < h.answers.size(); ++i) {
      const Answer& a = h.answers[i];
      if (workers[i] != worker || a.sent_us < f.start_us) continue;
      if (a.daemon == killed.daemon && a.run == killed.run) continue;
      if (!next || a.received_us < next->received_us) next = &a;
    }
    const std::int64_t limit_us = f.start_us + (f.end_us - f.start_us) + bound.base_ms * 1000;
    if (!next && history_end < limit_us) continue;  // the run ended first
    const std::int64_t took_us = next ? next->received_us - f.start_us : history_end - f.start_us;
    r.reclaim_s.push_back(static_cast<double>(took_us) / 1e6);
    if (bound.base_ms <= 0 || !quiet(schedule, f, f.start_us - bound.before_ms * 1000, limit_us))
      continue;
    ++r.reclaims_quiet;
    if (f.start_us + took_us > limit_us || !next) {
      r.violate("slow_reclaim",
                fmt::format("worker ID {} of d{} killed at {} ({} ms down) was {} {:.2f} s later, "
                            "past the bound of {:.2f} s, with no other fault meanwhile",
                            worker, f.daemon(), f.start_us, (f.end_us - f.start_us) / 1000,
                            next ? "served again" : "still not served",
                            static_cast<double>(took_us) / 1e6,
                            static_cast<double>(limit_us - f.start_us) / 1e6));
    }
  }
}

}  // namespace snowflake::chaos
