// The chaos checker's rules for dense sequences (GET /seq/<tag>): per tag,
// no number twice, none below its start, none at or below a floor that
// `seq raise` confirmed before the answer was asked for, each daemon run's
// numbers rising; and how much was served through ZooKeeper's outages.

#include <fmt/format.h>

#include <algorithm>

#include "check.hpp"
#include "snowflake/base/time_format.hpp"

namespace snowflake::chaos {

namespace {

using Window = std::pair<std::int64_t, std::int64_t>;  // [start, end] in us

// Merged windows, sorted: one binary search per answer.
std::vector<Window> merge_windows(std::vector<Window> windows) {
  std::sort(windows.begin(), windows.end());
  std::vector<Window> out;
  for (const auto& w : windows) {
    if (!out.empty() && w.first <= out.back().second) {
      out.back().second = std::max(out.back().second, w.second);
    } else {
      out.push_back(w);
    }
  }
  return out;
}

// Whether [sent, received] meets one of the windows.
bool meets(const std::vector<Window>& windows, std::int64_t sent, std::int64_t received) {
  const auto w =
      std::lower_bound(windows.begin(), windows.end(), sent,
                       [](const Window& window, std::int64_t t) { return window.second < t; });
  return w != windows.end() && w->first <= received;
}

bool is_zookeeper(const Fault& f) { return f.kind.starts_with("zk_"); }

// "s.daily@2026-11-30": one period of a sequence that restarts each day,
// checked as a sequence of its own; its start and availability are the
// sequence's ("s.daily").
std::string base_tag(const std::string& seq) { return seq.substr(0, seq.find('@')); }

// Availability: outside the daemon's own faults (and the cluster-wide
// ones); of that, while a ZooKeeper server was down.
void availability(const History& h, const std::vector<Fault>& schedule, CheckReport& r) {
  std::vector<Window> zookeeper_down;
  std::map<int, std::vector<Window>> own;  // the daemon's, and the cluster's (-1)
  for (const Fault& f : schedule) {
    if (is_zookeeper(f)) {
      zookeeper_down.emplace_back(f.start_us, f.end_us);
    } else {
      own[f.daemon()].emplace_back(f.start_us, f.end_us);
    }
  }
  zookeeper_down = merge_windows(zookeeper_down);
  std::map<int, std::vector<Window>> touching;
  for (const Answer& a : h.answers) {
    if (a.seq.empty() || a.daemon < 0 || a.received_us == 0) continue;
    auto it = touching.find(a.daemon);
    if (it == touching.end()) {
      std::vector<Window> w = own[a.daemon];
      w.insert(w.end(), own[-1].begin(), own[-1].end());
      it = touching.emplace(a.daemon, merge_windows(std::move(w))).first;
    }
    if (meets(it->second, a.sent_us, a.received_us)) continue;
    auto& s = r.sequences[base_tag(a.seq)];
    ++s.asked;
    if (a.status == 200) ++s.served;
    if (meets(zookeeper_down, a.sent_us, a.received_us)) {
      ++s.asked_zk_down;
      if (a.status == 200) ++s.served_zk_down;
    }
  }
}

// `seq raise`'s contract: once it exited 0, nothing at or below its floor
// in an answer asked for after.
void check_raises(const History& h, const std::vector<Fault>& schedule, CheckReport& r) {
  for (const Fault& f : schedule) {
    if (f.tag.empty()) continue;
    auto& s = r.sequences[f.tag];
    ++s.raises;
    if (f.confirmed_us == 0) continue;
    ++s.raises_confirmed;
    for (const Answer& a : h.answers) {
      if (a.seq != f.tag || a.sent_us < f.confirmed_us) continue;
      for (const auto& run : a.ids) {
        if (run.first > f.above_id) continue;
        r.violate("seq_below_raise",
                  fmt::format("{} gave {} of \"{}\", at or below the floor {} that `seq raise` "
                              "confirmed at {}",
                              who(a), run.first, f.tag, f.above_id,
                              format_iso8601_ms(f.confirmed_us / 1000)));
        break;
      }
    }
  }
}

}  // namespace

void check_sequences(const History& h, const std::vector<Fault>& schedule, CheckReport& r) {
  std::map<std::string, std::vector<Span>> spans;
  RisingGroups groups;
  for (const auto& [tag, start] : h.sequence_starts) r.sequences[tag].start = start;
  for (std::size_t i = 0; i < h.answers.size(); ++i) {
    const Answer& a = h.answers[i];
    if (a.seq.empty() || a.status != 200) continue;
    auto& s = r.sequences[a.seq];
    const auto start = h.sequence_starts.find(base_tag(a.seq));
    if (start != h.sequence_starts.end()) s.start = start->second;
    for (const auto& run : a.ids) {
      spans[a.seq].push_back({run.first, run.last(), i});
      s.lowest = std::min(s.lowest, run.first);
      s.highest = std::max(s.highest, run.last());
      if (start != h.sequence_starts.end() && run.first < s.start) {
        r.violate("seq_below_start", fmt::format("{} gave {} of \"{}\", below its start {}", who(a),
                                                 run.first, a.seq, s.start));
      }
    }
    if (a.daemon >= 0 && a.received_us > 0 && !a.ids.empty()) {
      groups[{a.daemon, a.run, fmt::format("number of \"{}\"", a.seq)}].push_back(i);
    }
  }
  for (auto& [tag, tag_spans] : spans) {
    const auto overlaps = find_overlaps(h, std::move(tag_spans), "seq_duplicate",
                                        fmt::format("numbers of \"{}\"", tag), r);
    r.sequences[tag].numbers = overlaps.given;
    r.sequences[tag].duplicates = overlaps.duplicates;
  }
  check_rising(h, groups, "seq_not_increasing", r);
  for (const std::string& tag : h.strict_sequences) check_real_time_order(h, tag, r);
  check_raises(h, schedule, r);
  if (!schedule.empty()) availability(h, schedule, r);
}

std::string sequences_text(const CheckReport& r) {
  const auto percent = [](std::uint64_t part, std::uint64_t whole) {
    return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  std::string out;
  for (const auto& [tag, s] : r.sequences) {
    const auto period = r.sequences.lower_bound(tag + "@");
    const bool by_period =
        s.numbers == 0 && period != r.sequences.end() && period->first.starts_with(tag + "@");
    out += fmt::format("sequence \"{}\": ", tag);
    out += by_period ? std::string("its numbers by period below")
                     : fmt::format("{} numbers, duplicates {}", s.numbers, s.duplicates);
    if (s.numbers > 0) {
      // How dense: numbers handed out against the span they came from.
      out += fmt::format(", {}..{} (start {}, {:.1f}% of the span handed out)", s.lowest, s.highest,
                         s.start, percent(s.numbers - s.duplicates, s.highest - s.lowest + 1));
    }
    // A period's asked and served are its sequence's.
    const bool a_period = tag.find('@') != std::string::npos;
    if (!a_period) {
      out += fmt::format("; served {:.1f}% of {} outside the daemons' faults",
                         percent(s.served, s.asked), s.asked);
    }
    if (s.asked_zk_down > 0) {
      out += fmt::format(", {:.1f}% of {} while a ZooKeeper server was down",
                         percent(s.served_zk_down, s.asked_zk_down), s.asked_zk_down);
    }
    if (s.raises > 0) {
      out +=
          fmt::format("; raised {} times, confirmed by seq raise {}", s.raises, s.raises_confirmed);
    }
    if (s.order_pairs > 0) {
      out += fmt::format("; strict: real-time order of {} pairs checked", s.order_pairs);
    }
    out += "\n";
  }
  return out;
}

}  // namespace snowflake::chaos
