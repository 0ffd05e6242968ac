// Real-time order for a sequence whose order is strict (one owner at a
// time, docs/api.md): every number an answer carries is above every number
// of any answer that was received before its request was sent, whichever
// daemons the two went to. Said of every such pair, checked by one sweep:
// answers by send time against a running maximum of those already received.

#include <fmt/format.h>

#include <algorithm>

#include "check.hpp"
#include "snowflake/base/time_format.hpp"

namespace snowflake::chaos {

namespace {

struct Timed {
  std::int64_t sent_us, received_us;
  std::uint64_t lowest, highest;
  std::size_t index;  // in the history
};

std::vector<Timed> answers_of(const History& h, const std::string& tag) {
  std::vector<Timed> out;
  for (std::size_t i = 0; i < h.answers.size(); ++i) {
    const Answer& a = h.answers[i];
    if (a.seq != tag || a.status != 200 || a.received_us == 0 || a.ids.empty()) continue;
    Timed t{a.sent_us, a.received_us, UINT64_MAX, 0, i};
    for (const auto& run : a.ids) {
      t.lowest = std::min(t.lowest, run.first);
      t.highest = std::max(t.highest, run.last());
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace

void check_real_time_order(const History& h, const std::string& tag, CheckReport& r) {
  std::vector<Timed> by_sent = answers_of(h, tag);
  std::vector<Timed> by_received = by_sent;
  std::sort(by_sent.begin(), by_sent.end(),
            [](const Timed& a, const Timed& b) { return a.sent_us < b.sent_us; });
  std::sort(by_received.begin(), by_received.end(),
            [](const Timed& a, const Timed& b) { return a.received_us < b.received_us; });
  auto& s = r.sequences[tag];
  std::size_t received = 0;  // how many of by_received came back before this send
  const Timed* highest = nullptr;
  for (const Timed& b : by_sent) {
    while (received < by_received.size() && by_received[received].received_us < b.sent_us) {
      const Timed& a = by_received[received++];
      if (!highest || a.highest > highest->highest) highest = &a;
    }
    s.order_pairs += received;
    if (!highest || b.lowest > highest->highest) continue;
    r.violate(
        "seq_out_of_order",
        fmt::format("{} gave {} of \"{}\", asked at {}, not above {}, which {} had "
                    "received at {}",
                    who(h.answers[b.index]), b.lowest, tag, format_iso8601_ms(b.sent_us / 1000),
                    highest->highest, who(h.answers[highest->index]),
                    format_iso8601_ms(highest->received_us / 1000)));
  }
}

}  // namespace snowflake::chaos
