#include "nemesis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace snowflake::chaos {

namespace {

// How often each kind is drawn.
struct Kind {
  const char* name;
  int weight;
};
constexpr Kind kKinds[] = {
    {"net_stall", 3},
    {"net_delay", 2},
    {"net_reset", 2},
    {"net_lose_reply", 2},
    {"kill", 2},
    {"pause", 2},
    {"term", 1},
    {"zk_kill", 1},
    {"zk_pause", 1},
    {"clock_step", 3},
    {"clock_slew", 1},
    {"disk_unwritable", 1},
    {"disk_full", 1},
    {"cut_off_and_jump", 1},
    {"floor_raise", 1},
    {"seq_raise", 1},
    {"seq_lose_reply", 2},
    // ZooKeeper losing what it acknowledged (docs/operations.md, "ZooKeeper
    // lost or restored its data"): rare, as each fences the cluster.
    {"zk_wipe", 1},
    {"zk_restore", 1},
    // A lease holder (chaos/holders.hpp) killed without giving back, frozen
    // past its lease, or cut off from every daemon while it runs: drawn
    // only when there are holders.
    {"holder_kill", 2},
    {"holder_pause", 2},
    {"holder_cut", 2},
};

bool is_process(const std::string& k) {
  return k == "kill" || k == "pause" || k == "term" || k == "holder_kill" || k == "holder_pause";
}
bool is_holder(const std::string& k) { return k.starts_with("holder_"); }
// The busy map's key of holder `h`, apart from the daemons'.
constexpr int kHolderKeys = 1'000'000;
bool is_zk(const std::string& k) { return k.starts_with("zk_"); }
// Faults of one class on one daemon do not overlap.
std::string fault_class(const std::string& k) {
  if (is_process(k)) return "process";
  if (k == "seq_lose_reply" || k == "holder_cut") return "net";
  return k.substr(0, k.find('_'));  // net, clock, disk
}

class Planner {
 public:
  explicit Planner(const NemesisOptions& o) : o_(o), random_(o.seed) {}

  std::vector<PlannedFault> plan() {
    const std::int64_t end = o_.length.count() - quiet_period(o_.length).count();
    std::vector<PlannedFault> out;
    if (!any_allowed()) return {};
    for (std::int64_t at = gap(); at < end; at += gap()) {
      const std::string kind = draw_kind();
      for (auto& f : make(kind, at, end)) {
        if (!f.kind.empty()) out.push_back(std::move(f));
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const PlannedFault& a, const PlannedFault& b) {
      return a.at_ms < b.at_ms;
    });
    return out;
  }

 private:
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(random_);
  }
  // Spread evenly over orders of magnitude: ms steps as often as minutes.
  std::int64_t log_uniform(std::int64_t lo, std::int64_t hi) {
    const double x = std::uniform_real_distribution<double>(
        std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi)))(random_);
    return static_cast<std::int64_t>(std::exp(x));
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(random_); }
  std::int64_t gap() {
    return std::max<std::int64_t>(
        50, static_cast<std::int64_t>(std::exponential_distribution<double>(
                1.0 / static_cast<double>(std::max<std::int64_t>(1, o_.mean_gap_ms)))(random_)));
  }

  bool any_allowed() const {
    return std::any_of(std::begin(kKinds), std::end(kKinds),
                       [&](const Kind& k) { return allowed(k.name); });
  }
  std::string draw_kind() {
    int total = 0;
    for (const auto& k : kKinds) total += allowed(k.name) ? k.weight : 0;
    int pick = static_cast<int>(uniform(0, total - 1));
    for (const auto& k : kKinds) {
      if (!allowed(k.name)) continue;
      if (pick < k.weight) return k.name;
      pick -= k.weight;
    }
    return "net_reset";
  }
  bool allowed(const std::string& kind) const {
    if (kind == "disk_full" && !o_.disk_full) return false;
    if (kind == "floor_raise" && o_.static_workers) return false;
    if (is_holder(kind) && o_.holders <= 0) return false;
    return o_.only_kinds.empty() ||
           std::find(o_.only_kinds.begin(), o_.only_kinds.end(), kind) != o_.only_kinds.end();
  }

  // A daemon free for a fault of `kind` over [at, at + duration); -1 if none.
  int free_daemon(const std::string& kind, std::int64_t at, std::int64_t duration) {
    const int first = static_cast<int>(uniform(0, o_.daemons - 1));
    for (int i = 0; i < o_.daemons; ++i) {
      const int d = (first + i) % o_.daemons;
      if (is_free(d, kind, at)) {
        book(d, kind, at + duration);
        return d;
      }
    }
    return -1;
  }
  bool is_free(int d, const std::string& kind, std::int64_t at) {
    auto& busy = busy_until_[d];
    if (busy["process"] > at) return false;  // down or frozen: nothing else makes sense
    if (is_process(kind)) {
      return std::all_of(busy.begin(), busy.end(), [&](const auto& b) { return b.second <= at; });
    }
    return busy[fault_class(kind)] <= at;
  }
  void book(int d, const std::string& kind, std::int64_t until) {
    busy_until_[d][fault_class(kind)] = until;
  }

  std::vector<PlannedFault> make(const std::string& kind, std::int64_t at, std::int64_t end) {
    const auto clamp = [&](std::int64_t duration) { return std::min(duration, end - at); };
    if (kind == "zk_wipe" || kind == "zk_restore") return lose_history(kind, at, end);
    if (is_zk(kind)) {
      if (zk_busy_until_ > at) return {};
      PlannedFault f{at, clamp(kind == "zk_kill" ? uniform(1000, 5000) : uniform(500, 4000)), kind,
                     o_.ensemble ? (chance(0.5) ? -1 : static_cast<int>(uniform(0, 2))) : 0};
      zk_busy_until_ = at + f.duration_ms;
      return {f};
    }
    if (kind == "floor_raise") {  // a migration: snowflaked pool floor, cluster-wide
      if (floor_busy_until_ > at) return {};
      // The old system's last ID: its clock up to 3 s behind ours, or 2 s ahead.
      PlannedFault f{at, clamp(uniform(6000, 10'000)), kind, -1, uniform(-3000, 2000)};
      floor_busy_until_ = at + f.duration_ms;
      return {f};
    }
    if (kind == "seq_raise") {  // snowflaked seq raise, on one of the load's sequences
      if (seq_raise_busy_until_ > at) return {};
      // Above what the load has been given so far, by up to a few ranges:
      // what daemons hold in their buffers.
      PlannedFault f{at, clamp(uniform(4000, 8000)), kind, static_cast<int>(uniform(0, 1)),
                     uniform(0, 3000)};
      seq_raise_busy_until_ = at + f.duration_ms;
      return {f};
    }
    if (is_holder(kind)) return {make_holder_fault(kind, at, end)};
    if (kind == "cut_off_and_jump") {  // the fault that broke the first build
      const std::int64_t duration = clamp(uniform(2000, 6000));
      const int d = free_daemon("net_stall", at, duration);
      if (d < 0 || !is_free(d, "clock_step", at)) return {};
      book(d, "clock_step", at + duration);
      const std::int64_t jump = log_uniform(1000, 120'000) * (chance(0.8) ? 1 : -1);
      return {PlannedFault{at, duration, "net_stall", d},
              PlannedFault{at + uniform(0, duration / 2), duration / 2, "clock_step", d, jump}};
    }
    PlannedFault f{at, 0, kind, 0};
    if (kind == "net_stall") f.duration_ms = uniform(500, 8000);
    if (kind == "net_delay") f.duration_ms = uniform(1000, 6000), f.amount = uniform(20, 400);
    if (kind == "net_lose_reply" || kind == "seq_lose_reply") f.amount = uniform(0, 1500);
    if (kind == "kill")
      f.duration_ms = uniform(100, 3000), f.fresh_state = chance(0.3) && !o_.static_workers;
    if (kind == "pause") f.duration_ms = uniform(200, 4000);
    if (kind == "term") f.duration_ms = uniform(100, 2000);
    if (kind == "clock_step") {
      f.duration_ms = uniform(1000, 10'000);
      f.amount = log_uniform(1, 120'000) * (chance(0.5) ? 1 : -1);
    }
    if (kind == "clock_slew") {
      f.duration_ms = uniform(2000, 10'000);
      f.amount = log_uniform(1000, 50'000) * (chance(0.5) ? 1 : -1);  // ppm: 0.1 % .. 5 %
    }
    if (kind.starts_with("disk_")) f.duration_ms = uniform(500, 5000);
    f.duration_ms = clamp(f.duration_ms);
    f.target = free_daemon(kind, at, f.duration_ms);
    if (f.target < 0) return {};
    return {f};
  }

  // A holder's fault (none, kind "", if every holder is busy then). Its
  // lease is 1.5 s: a pause of up to 4 s outlasts it about half the time.
  PlannedFault make_holder_fault(const std::string& kind, std::int64_t at, std::int64_t end) {
    std::int64_t duration = kind == "holder_kill"    ? uniform(100, 3000)
                            : kind == "holder_pause" ? uniform(300, 4000)
                                                     : uniform(500, 5000);
    duration = std::min(duration, end - at);
    const int first = static_cast<int>(uniform(0, o_.holders - 1));
    for (int i = 0; i < o_.holders; ++i) {
      const int h = (first + i) % o_.holders;
      if (is_free(kHolderKeys + h, kind, at)) {
        book(kHolderKeys + h, kind, at + duration);
        return PlannedFault{at, duration, kind, h};
      }
    }
    return PlannedFault{at, 0, "", -1};
  }

  // A wipe: ZooKeeper back empty at `at`. A restore: a backup taken at
  // `at`, and ZooKeeper back from it a few seconds later, when every daemon
  // has written since (its heartbeats). Either lasts until the runbook has
  // run: the fault's duration is the time the daemons are given to notice
  // before the sequences are raised.
  std::vector<PlannedFault> lose_history(const std::string& kind, std::int64_t at,
                                         std::int64_t end) {
    if (zk_busy_until_ > at) return {};
    std::vector<PlannedFault> out;
    std::int64_t lost_at = at;
    if (kind == "zk_restore") {
      lost_at = at + uniform(2000, 8000);
      if (lost_at >= end) return {};
      out.push_back(PlannedFault{at, 0, "zk_backup", 0});
    }
    out.push_back(PlannedFault{lost_at, std::min(uniform(1000, 4000), end - lost_at), kind, 0});
    zk_busy_until_ = lost_at + out.back().duration_ms;
    return out;
  }

  const NemesisOptions& o_;
  std::mt19937_64 random_;
  std::map<int, std::map<std::string, std::int64_t>> busy_until_;
  std::int64_t zk_busy_until_ = 0;
  std::int64_t floor_busy_until_ = 0;
  std::int64_t seq_raise_busy_until_ = 0;
};

}  // namespace

std::string PlannedFault::describe() const {
  if (kind == "floor_raise") {
    return fmt::format("floor_raise cluster: above the last ID of {:+} ms, {} ms to confirm",
                       amount, duration_ms);
  }
  if (kind == "seq_raise") {
    return fmt::format(
        "seq_raise sequence {}: above the highest number the load was given, + {}, {} ms to "
        "confirm",
        target, amount, duration_ms);
  }
  if (kind == "zk_backup") return "zk_backup: a copy of ZooKeeper's data";
  if (kind == "zk_wipe" || kind == "zk_restore") {
    return fmt::format(
        "{}: ZooKeeper back {}, the sequences raised past the load's numbers {} ms later", kind,
        kind == "zk_wipe" ? "empty"
                          : "from the last zk_backup, `cluster fence --wait` started before",
        duration_ms);
  }
  std::string what = fmt::format(
      "{} {}", kind,
      kind.starts_with("zk_") ? (target < 0 ? std::string("leader") : fmt::format("zk{}", target))
      : kind.starts_with("holder_") ? fmt::format("h{}", target)
                                    : fmt::format("d{}", target));
  if (duration_ms > 0) what += fmt::format(" for {} ms", duration_ms);
  if (kind == "clock_step") what += fmt::format(", {:+} ms", amount);
  if (kind == "clock_slew") what += fmt::format(", {:+} ppm", amount);
  if (kind == "net_delay") what += fmt::format(", {} ms a chunk", amount);
  if (kind == "net_lose_reply") what += fmt::format(", then {} ms refused", amount);
  if (kind == "seq_lose_reply")
    what += fmt::format(" (a set: a range taken, given back or held), then {} ms refused", amount);
  if (kind == "kill" && fresh_state) what += ", restarted with a fresh state dir";
  return what;
}

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k;
    for (const auto& kind : kKinds) {
      if (std::string(kind.name) != "cut_off_and_jump") k.emplace_back(kind.name);
    }
    k.emplace_back("zk_backup");  // before each zk_restore
    return k;
  }();
  return kinds;
}

const std::vector<std::string>& drawn_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k;
    for (const auto& kind : kKinds) k.emplace_back(kind.name);
    return k;
  }();
  return kinds;
}

std::chrono::milliseconds quiet_period(std::chrono::milliseconds length) {
  return std::max(std::chrono::milliseconds(10'000), length * 15 / 100);
}

std::vector<PlannedFault> plan_faults(const NemesisOptions& options) {
  return Planner(options).plan();
}

}  // namespace snowflake::chaos
