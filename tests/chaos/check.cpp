#include "check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "snowflake/base/time_format.hpp"

namespace snowflake::chaos {

namespace {

constexpr std::size_t kExamplesPerRule = 5;

// The snowflake IDs' spans (sequence numbers are checked per tag).
std::vector<Span> id_spans(const History& h) {
  std::vector<Span> spans;
  for (std::size_t i = 0; i < h.answers.size(); ++i) {
    if (!h.answers[i].seq.empty()) continue;
    for (const auto& run : h.answers[i].ids) spans.push_back({run.first, run.last(), i});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.first, a.last) < std::tie(b.first, b.last);
  });
  return spans;
}

// While ZooKeeper has lost a sequence (a zk_wipe, until the runbook made it
// again, and a few seconds for the daemons to see it made), a daemon
// started meanwhile does not know the tag: 404 is the truth then.
bool tag_lost(const Answer& a, const std::vector<Fault>& schedule) {
  constexpr std::int64_t kSeenWithinUs = 5'000'000;
  return std::any_of(schedule.begin(), schedule.end(), [&](const Fault& f) {
    return f.kind == "zk_wipe" && a.sent_us <= f.end_us + kSeenWithinUs &&
           a.received_us >= f.start_us;
  });
}

// period_closed: a daemon's clock stepped back into a period it let go of
// (over on ZooKeeper's clock too), which only a clock fault of that daemon
// does; while it lasts, and until the coordinator's next skew check after
// the clock is stepped right.
bool clock_fault_on(const Answer& a, const std::vector<Fault>& schedule) {
  constexpr std::int64_t kSkewCheckedWithinUs = 5'000'000;
  return std::any_of(schedule.begin(), schedule.end(), [&](const Fault& f) {
    return f.kind.starts_with("clock_") && f.daemon() == a.daemon &&
           a.sent_us <= f.end_us + kSkewCheckedWithinUs && a.received_us >= f.start_us;
  });
}

void check_answers(const History& h, const std::vector<Fault>& schedule, const IdLayout& layout,
                   CheckReport& r) {
  for (const Answer& a : h.answers) {
    ++r.answers;
    if (a.status == 0) {
      ++r.refusals["no_answer"];
      continue;
    }
    if (a.status != 200) {
      ++r.refusals[a.error.empty() ? fmt::format("http_{}", a.status) : a.error];
      if (a.status == 404 && a.error == "unknown_sequence" && !a.seq.empty() &&
          tag_lost(a, schedule)) {
        continue;
      }
      if (a.error == "period_closed" && !schedule.empty() && !clock_fault_on(a, schedule)) {
        r.violate("bad_answer", fmt::format("{} answered period_closed with no clock fault of its "
                                            "own under way",
                                            who(a)));
        continue;
      }
      if (a.status != 503 || !is_documented_refusal(a.error) || !a.retry_after) {
        r.violate("bad_answer", fmt::format("{} answered {} \"{}\"{}", who(a), a.status, a.error,
                                            a.retry_after ? "" : " without Retry-After"));
      }
      continue;
    }
    if (!a.error.empty()) {  // a 200 the load could not read
      r.violate("bad_answer", fmt::format("{} answered 200, {}", who(a), a.error));
      continue;
    }
    if (!a.seq.empty()) continue;  // numbers, not IDs: check_sequences
    for (const auto& run : a.ids) {
      r.ids += run.count;
      if (a.received_us == 0) continue;  // a plain list: no times to judge by
      const auto stamped = layout.decompose(run.last());
      if (!stamped) {
        r.violate("bad_answer",
                  fmt::format("{} gave {}, not an ID of this layout", who(a), run.last()));
        continue;
      }
      const std::int64_t clock_ms = a.received_us / 1000 + a.clock_offset_ms;
      if (stamped.value().timestamp_ms > clock_ms) {
        r.violate("borrowed_time",
                  fmt::format("{} gave ID {} stamped {}, but its clock read at most {} then",
                              who(a), run.last(), format_iso8601_ms(stamped.value().timestamp_ms),
                              format_iso8601_ms(clock_ms)));
      }
    }
  }
}

// Within one daemon run and worker ID, an answer sent after another was
// received carries only higher IDs.
void check_increasing(const History& h, const IdLayout& layout, CheckReport& r) {
  RisingGroups groups;
  for (std::size_t i = 0; i < h.answers.size(); ++i) {
    const Answer& a = h.answers[i];
    if (a.daemon < 0 || a.ids.empty() || a.received_us == 0 || !a.seq.empty()) continue;
    const auto d = layout.decompose(a.ids.front().first);
    if (!d) continue;
    groups[{a.daemon, a.run, fmt::format("an ID of worker {},", d.value().worker_id)}].push_back(i);
  }
  check_rising(h, groups, "not_increasing", r);
}

// The contract of `snowflaked pool floor`: once it has exited 0, no answer
// asked for after that carries an ID at or below its floor.
void check_floors(const History& h, const std::vector<Fault>& schedule, CheckReport& r) {
  for (const Fault& f : schedule) {
    if (f.above_id == 0 || !f.tag.empty()) continue;  // a tag's: a sequence's raise
    ++r.floors_raised;
    if (f.confirmed_us == 0) continue;
    ++r.floors_confirmed;
    for (const Answer& a : h.answers) {
      if (a.sent_us < f.confirmed_us || !a.seq.empty()) continue;
      for (const auto& run : a.ids) {
        if (run.first > f.above_id) continue;
        r.violate(
            "below_floor",
            fmt::format("{} gave ID {}, at or below the floor {} that `pool floor` confirmed at {}",
                        who(a), run.first, f.above_id, format_iso8601_ms(f.confirmed_us / 1000)));
        break;
      }
    }
  }
}

bool touches(const Fault& f, int daemon) { return f.daemon() < 0 || f.daemon() == daemon; }

void availability_and_recovery(const History& h, const std::vector<Fault>& schedule,
                               CheckReport& r) {
  std::map<int, std::vector<const Answer*>> by_daemon;
  for (const Answer& a : h.answers) {
    if (a.daemon >= 0 && a.received_us > 0 && a.seq.empty()) by_daemon[a.daemon].push_back(&a);
  }
  for (auto& [d, answers] : by_daemon) {
    std::sort(answers.begin(), answers.end(),
              [](const Answer* x, const Answer* y) { return x->sent_us < y->sent_us; });
    // The daemon's fault windows, merged: one binary search per answer.
    std::vector<std::pair<std::int64_t, std::int64_t>> windows;
    for (const Fault& f : schedule) {
      if (touches(f, d)) windows.emplace_back(f.start_us, f.end_us);
    }
    std::sort(windows.begin(), windows.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (const auto& w : windows) {
      if (!merged.empty() && w.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, w.second);
      } else {
        merged.push_back(w);
      }
    }
    auto& av = r.availability[d];
    for (const Answer* a : answers) {
      // The first window ending at or after the answer was sent: faulted if it began before it
      // arrived.
      const auto w =
          std::lower_bound(merged.begin(), merged.end(), a->sent_us,
                           [](const auto& window, std::int64_t t) { return window.second < t; });
      if (w != merged.end() && w->first <= a->received_us) continue;
      // A standby waits for a free worker ID by design (more daemons than
      // the pool holds): not a daemon that fails to serve.
      if (a->standby) {
        ++av.standby;
        continue;
      }
      ++av.asked;
      if (a->status == 200) ++av.served;
    }
  }
  // Recovery from a fault counts only where it was the last fault standing:
  // if another fault touched that daemon before it served again, the wait
  // was that one's too, and is left out.
  std::map<int, std::vector<const Answer*>> served;  // 200s by time sent
  for (const auto& [d, answers] : by_daemon) {
    for (const Answer* a : answers) {
      if (a->status == 200) served[d].push_back(a);
    }
  }
  double slowest = -1;
  for (const Fault& f : schedule) {
    double worst = -1;
    for (const auto& [d, answers] : served) {
      if (!touches(f, d)) continue;
      const auto next =
          std::lower_bound(answers.begin(), answers.end(), f.end_us,
                           [](const Answer* a, std::int64_t t) { return a->sent_us < t; });
      if (next == answers.end()) continue;  // the run ended first
      const bool overlapped = std::any_of(schedule.begin(), schedule.end(), [&](const Fault& g) {
        return &g != &f && touches(g, d) && g.start_us <= (*next)->sent_us && g.end_us >= f.end_us;
      });
      if (overlapped) continue;
      worst = std::max(worst, static_cast<double>((*next)->received_us - f.end_us) / 1e6);
    }
    if (worst < 0) continue;
    r.recovery_s.push_back(worst);
    if (worst > slowest) {
      slowest = worst;
      r.slowest_recovery = fmt::format("{} on {} ({})", f.kind, f.target, f.detail);
    }
  }
}

void worker_reuse(const History& h, const std::vector<Span>& spans, const IdLayout& layout,
                  CheckReport& r) {
  std::map<std::uint32_t, std::pair<std::pair<int, int>, std::int64_t>>
      previous;  // owner, last stamp
  for (const Span& s : spans) {
    const Answer& a = h.answers[s.answer];
    if (a.daemon < 0) continue;
    const auto first = layout.decompose(s.first);
    const auto last = layout.decompose(s.last);
    if (!first || !last) continue;
    const std::uint32_t w = first.value().worker_id;
    const std::pair<int, int> owner{a.daemon, a.run};
    auto& reuse = r.reuse[w];
    if (const auto it = previous.find(w); it != previous.end() && it->second.first != owner) {
      ++reuse.handovers;
      reuse.min_gap_ms = std::min(reuse.min_gap_ms, first.value().timestamp_ms - it->second.second);
    }
    previous[w] = {owner, last.value().timestamp_ms};
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void CheckReport::violate(const std::string& rule, const std::string& detail) {
  if (violations_by_rule[rule]++ < kExamplesPerRule) examples.push_back({rule, detail});
}

std::string who(const Answer& a) {
  if (a.daemon < 0) return "an answer";
  return fmt::format("d{} run {} (sent {}, received {})", a.daemon, a.run,
                     format_iso8601_ms(a.sent_us / 1000), format_iso8601_ms(a.received_us / 1000));
}

Overlaps find_overlaps(const History& h, std::vector<Span> spans, const std::string& rule,
                       const std::string& what, CheckReport& r) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.first, a.last) < std::tie(b.first, b.last);
  });
  Overlaps out;
  std::uint64_t distinct = 0;
  std::uint64_t covered_to = 0;    // one past the highest number seen so far
  const Span* reaching = nullptr;  // the span that reaches it
  for (const Span& s : spans) {
    out.given += s.last - s.first + 1;
    if (reaching && s.first < covered_to) {
      r.violate(rule, fmt::format("{} {}..{} issued twice: to {} and to {}", what, s.first,
                                  std::min(s.last, covered_to - 1),
                                  who(h.answers[reaching->answer]), who(h.answers[s.answer])));
    }
    const std::uint64_t fresh_from = reaching ? std::max(s.first, covered_to) : s.first;
    if (s.last + 1 > fresh_from) distinct += s.last + 1 - fresh_from;
    if (!reaching || s.last + 1 > covered_to) {
      covered_to = s.last + 1;
      reaching = &s;
    }
  }
  out.duplicates = out.given - distinct;
  return out;
}

void check_rising(const History& h, const RisingGroups& groups, const std::string& rule,
                  CheckReport& r) {
  for (const auto& [key, unsorted] : groups) {
    std::vector<std::size_t> members = unsorted;
    std::sort(members.begin(), members.end(), [&](std::size_t x, std::size_t y) {
      return h.answers[x].received_us < h.answers[y].received_us;
    });
    std::vector<std::int64_t> received;
    std::vector<std::uint64_t> highest;  // prefix maximum, in order of receipt
    for (const std::size_t i : members) {
      std::uint64_t top = 0;
      for (const auto& run : h.answers[i].ids) top = std::max(top, run.last());
      received.push_back(h.answers[i].received_us);
      highest.push_back(highest.empty() ? top : std::max(highest.back(), top));
    }
    for (const std::size_t i : members) {
      const Answer& a = h.answers[i];
      const auto before = std::lower_bound(received.begin(), received.end(), a.sent_us);
      if (before == received.begin()) continue;
      const std::uint64_t floor = highest[static_cast<std::size_t>(before - received.begin()) - 1];
      std::uint64_t lowest = UINT64_MAX;
      for (const auto& run : a.ids) lowest = std::min(lowest, run.first);
      if (lowest <= floor) {
        r.violate(rule, fmt::format("{} gave {} {}, not above {} answered before it was sent",
                                    who(a), std::get<2>(key), lowest, floor));
      }
    }
  }
}

bool is_documented_refusal(const std::string& code) {
  static const std::set<std::string> documented{"not_ready",
                                                "lease_expired",
                                                "clock_skew",
                                                "clock_moved_backwards",
                                                "clock_before_epoch",
                                                "time_exhausted",
                                                "time_not_reserved",
                                                "floor_ahead",
                                                "sequence_unavailable",
                                                "cluster_fenced",
                                                "sequence_frozen",
                                                "period_closed",
                                                "not_owner"};
  return documented.contains(code);
}

CheckReport check(const History& history, const std::vector<Fault>& schedule,
                  const IdLayout& layout, const ReclaimBound& reclaim) {
  CheckReport r;
  check_answers(history, schedule, layout, r);
  const auto spans = id_spans(history);
  r.duplicates = find_overlaps(history, spans, "duplicate", "IDs", r).duplicates;
  check_increasing(history, layout, r);
  check_floors(history, schedule, r);
  if (!schedule.empty()) availability_and_recovery(history, schedule, r);
  worker_reuse(history, spans, layout, r);
  check_reclaims(history, schedule, layout, reclaim, r);
  check_sequences(history, schedule, r);
  return r;
}

std::string to_text(const CheckReport& r) {
  std::string out =
      fmt::format("answers {}, IDs checked {}, duplicates {}\n", r.answers, r.ids, r.duplicates);
  out += "refusals by code:";
  if (r.refusals.empty()) out += " none";
  for (const auto& [code, n] : r.refusals) out += fmt::format(" {} {}", code, n);
  out += "\n";
  if (!r.availability.empty()) {
    out += "availability outside the daemon's own faults and ZooKeeper's:";
    for (const auto& [d, a] : r.availability) {
      out += fmt::format(
          " d{} {:.1f}% of {}", d,
          a.asked ? 100.0 * static_cast<double>(a.served) / static_cast<double>(a.asked) : 0.0,
          a.asked);
      if (a.standby) out += fmt::format(" (+{} as a standby)", a.standby);
    }
    out += "\n";
  }
  if (!r.recovery_s.empty()) {
    out += fmt::format(
        "serving again after a fault ended (where no other fault touched the daemon "
        "meanwhile): median {:.2f} s, max {:.2f} s ({}), over {} faults\n",
        median(r.recovery_s), *std::max_element(r.recovery_s.begin(), r.recovery_s.end()),
        r.slowest_recovery, r.recovery_s.size());
  }
  if (!r.reuse.empty()) {
    out +=
        "worker IDs passed between owners (handovers, least gap between one owner's last stamp and "
        "the next's first):";
    for (const auto& [w, reuse] : r.reuse) {
      out += reuse.handovers ? fmt::format(" {}: {} ({} ms)", w, reuse.handovers, reuse.min_gap_ms)
                             : fmt::format(" {}: 0", w);
    }
    out += "\n";
  }
  if (!r.reclaim_s.empty()) {
    out += fmt::format(
        "a killed daemon's worker ID serving again: median {:.2f} s, max {:.2f} s, over {} kills "
        "({} with no other fault meanwhile, held to the bound)\n",
        median(r.reclaim_s), *std::max_element(r.reclaim_s.begin(), r.reclaim_s.end()),
        r.reclaim_s.size(), r.reclaims_quiet);
  }
  if (r.floors_raised > 0) {
    out += fmt::format("migration floors raised under load: {}, confirmed by pool floor: {}\n",
                       r.floors_raised, r.floors_confirmed);
  }
  out += sequences_text(r);
  if (r.ok()) {
    out +=
        "OK: no duplicate, no borrowed time, increasing within each ownership, every answer "
        "documented, nothing below a confirmed floor";
    out += r.sequences.empty() ? "\n"
                               : "; per sequence no number twice, none below its start or a "
                                 "confirmed raise, rising within each daemon run, a strict "
                                 "one's in real-time order across the daemons\n";
  } else {
    out += "FAILED:";
    for (const auto& [rule, n] : r.violations_by_rule) out += fmt::format(" {} {}", rule, n);
    out += "\n";
    for (const auto& v : r.examples) out += fmt::format("  {}: {}\n", v.rule, v.detail);
  }
  return out;
}

}  // namespace snowflake::chaos
