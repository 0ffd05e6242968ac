// A randomized fault injector against a real snowflaked cluster: starts
// ZooKeeper (a server or a 3-node ensemble) and K daemons, loads every daemon,
// applies a fault schedule drawn from the seed, then checks every answer
// (check.hpp). Bounded in time; kills all it started, by pid; leaves one
// directory with every log, the plan, the schedule as applied, the history
// and the report.
//
//   chaos_runner [--seed N] [--seconds S | --minutes M] [--daemons K] [--worker-bits B]
//                [--ensemble] [--strategy recycle|sequential|static] [--suspended K]
//                [--holders H [--holder-program CMD]...] [--out DIR]
//
// --strategy static: each daemon's worker ID from its config (0, 1, ...),
// its sequences from ZooKeeper (sequences.enabled): what ZooKeeper's loss
// does to them, and the runbook's static form (cluster fence on a static
// config). No pool floor is raised and no kill restarts on a fresh state
// dir (static mode's floor lives there alone); the strict tag, which no
// static daemon owns, is refused not_owner.
//
// --suspended K: the first K daemons run as on hosts that were suspended
// (their CLOCK_BOOTTIME far ahead of CLOCK_MONOTONIC); needs root, else
// they run as the others (plan.txt says so).
//
// --holders H: H lease holders (chaos/holders.hpp), generators in other
// processes that lease worker IDs of the pool from the daemons and make IDs
// in-process; their faults are drawn too (killed, frozen past the lease,
// cut off from every daemon), and every ID they made is checked with the
// daemons' (one ID space: nothing twice). Recycle mode only.
//
// --holder-program CMD: the program a holder runs, words split at spaces
// (the lease tests' tests/holders/lease_holder by default); given more than
// once, holder h runs the (h mod n)th: a client library's generator beside
// another's (clients/*/ chaos holders take lease_holder's arguments).
//
// Exit 0: every rule held; 1: a rule broken or a daemon crashed; 2: usage.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "../support/wall_clock.hpp"
#include "check.hpp"
#include "cluster.hpp"
#include "holders.hpp"
#include "load.hpp"
#include "nemesis.hpp"
#include "runbook.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/sequences/period.hpp"

using namespace snowflake;
using namespace snowflake::chaos;
using snowflake::test::wall_us_now;
using namespace std::chrono_literals;

namespace {

struct Options {
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::chrono::milliseconds length{60'000};
  int daemons = 4;
  int worker_bits = 2;
  bool ensemble = false;
  std::string strategy = "recycle";
  int suspended = 0;
  int holders = 0;
  std::vector<std::vector<std::string>> holder_programs;  // empty: lease_holder
  std::vector<std::string> faults;                        // empty: every kind
  std::int64_t mean_gap_ms = 1200;
  std::filesystem::path out;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr
      << "chaos_runner: " << why
      << "\nusage: chaos_runner [--seed N] [--seconds S | --minutes M] [--daemons K>=4] "
         "[--worker-bits 2-4] [--ensemble] [--strategy recycle|sequential|static] [--suspended K] "
         "[--holders H [--holder-program CMD]...] [--faults KIND,...] "
         "[--mean-gap-ms MS] [--out DIR]\n";
  std::exit(2);
}

// "/usr/bin/python3 holder.py": a command's words.
std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty()) usage("--holder-program: a command");
  return words;
}

// "kill,pause": each one of nemesis.hpp's drawn_kinds().
std::vector<std::string> split_kinds(const std::string& list) {
  std::vector<std::string> kinds;
  std::size_t from = 0;
  while (from <= list.size()) {
    const std::size_t comma = std::min(list.find(',', from), list.size());
    const std::string kind = list.substr(from, comma - from);
    const auto& known = drawn_kinds();
    if (std::find(known.begin(), known.end(), kind) == known.end()) {
      usage(fmt::format("--faults: \"{}\" is not a fault kind (one of: {})", kind,
                        fmt::join(known, ", ")));
    }
    kinds.push_back(kind);
    from = comma + 1;
  }
  return kinds;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--seed")
        o.seed = std::stoull(value()), o.seed_given = true;
      else if (arg == "--seconds")
        o.length = std::chrono::seconds(std::stoll(value()));
      else if (arg == "--minutes")
        o.length = std::chrono::minutes(std::stoll(value()));
      else if (arg == "--daemons")
        o.daemons = std::stoi(value());
      else if (arg == "--worker-bits")
        o.worker_bits = std::stoi(value());
      else if (arg == "--ensemble")
        o.ensemble = true;
      else if (arg == "--strategy")
        o.strategy = value();
      else if (arg == "--suspended")
        o.suspended = std::stoi(value());
      else if (arg == "--holders")
        o.holders = std::stoi(value());
      else if (arg == "--holder-program")
        o.holder_programs.push_back(split_words(value()));
      else if (arg == "--faults")
        o.faults = split_kinds(value());
      else if (arg == "--mean-gap-ms")
        o.mean_gap_ms = std::stoll(value());
      else if (arg == "--out")
        o.out = value();
      else
        usage("unknown argument " + arg);
    } catch (const std::invalid_argument&) {
      usage(arg + ": not a number");
    }
  }
  if (!o.seed_given) o.seed = std::random_device{}();
  if (o.daemons < 4) usage("--daemons must be at least 4");
  if (o.worker_bits < 2 || o.worker_bits > 4) usage("--worker-bits: 2 to 4");
  if (o.strategy != "recycle" && o.strategy != "sequential" && o.strategy != "static")
    usage("--strategy: recycle, sequential or static");
  // As many sequential identities (or static worker IDs) as the layout has
  // worker IDs, at most.
  if (o.strategy != "recycle" && o.daemons > (1 << o.worker_bits))
    usage("--strategy " + o.strategy + ": at most 2^worker-bits daemons");
  if (o.length < 20s) usage("a run is at least 20 seconds");
  if (o.suspended < 0 || o.suspended > o.daemons) usage("--suspended: 0 to --daemons");
  if (o.mean_gap_ms < 50) usage("--mean-gap-ms: at least 50");
  if (o.holders < 0 || o.holders > 8) usage("--holders: 0 to 8");
  if (o.holders > 0 && o.strategy != "recycle") usage("--holders: recycle mode only");
  // The holders' worker IDs come from the daemons' pool, one kept free.
  if (o.holders > 0 && o.daemons + o.holders + 1 > (1 << o.worker_bits))
    usage("--holders: the pool (2^worker-bits) must hold the daemons, the holders and one more");
  if (o.out.empty())
    o.out = std::filesystem::path("build/chaos") /
            fmt::format("seed{}-{}", o.seed, wall_us_now() / 1'000'000);
  return o;
}

// Does the plan to the cluster, writing the schedule as it happened.
class Nemesis {
 public:
  Nemesis(ChaosCluster& cluster, const ChaosLoad& load, std::ofstream& schedule,
          ChaosHolders* holders, std::ofstream& holder_schedule)
      : cluster_(cluster),
        load_(load),
        schedule_(schedule),
        holders_(holders),
        holder_schedule_(holder_schedule),
        runbook_(cluster, load) {}

  void start(std::size_t i, const PlannedFault& f) {
    Applied a{f, wall_us_now(), 0, 0, nullptr, 0};
    if (f.kind == "floor_raise") start_floor(a, i);
    if (f.kind == "seq_raise") start_seq_raise(a, i);
    const int d = f.target;
    if (f.kind.starts_with("holder_")) {
      if (f.kind == "holder_kill") holders_->kill(d);
      if (f.kind == "holder_pause") holders_->freeze(d, true);
      if (f.kind == "holder_cut") holders_->cut_off(d, true);
    } else if (f.kind == "net_stall")
      cluster_.stall(d, true);
    else if (f.kind == "net_delay")
      cluster_.delay(d, std::chrono::milliseconds(f.amount));
    else if (f.kind == "net_reset")
      cluster_.reset_connections(d);
    else if (f.kind == "net_lose_reply")
      cluster_.lose_next_reply(d, std::chrono::milliseconds(f.amount));
    else if (f.kind == "seq_lose_reply")
      cluster_.lose_next_reply(d, std::chrono::milliseconds(f.amount), /*set_data=*/true);
    else if (f.kind == "kill")
      cluster_.stop_daemon(d, SIGKILL);
    else if (f.kind == "term")
      cluster_.stop_daemon(d, SIGTERM);
    else if (f.kind == "pause")
      cluster_.freeze(d, true);
    else if (f.kind == "zk_kill")
      a.zk_server = cluster_.zk_stop(f.target);
    else if (f.kind == "zk_pause")
      a.zk_server = cluster_.zk_freeze(f.target, true);
    else if (f.kind == "clock_step")
      cluster_.set_clock_offset_ms(d, cluster_.clock_offset_ms(d) + f.amount);
    else if (f.kind == "clock_slew")
      a.slew_from_us = a.start_us;
    else if (f.kind == "disk_unwritable")
      cluster_.state_unwritable(d, true);
    else if (f.kind == "disk_full")
      cluster_.state_full(d, true);
    else if (f.kind == "zk_backup")
      cluster_.zk_back_up();
    else if (f.kind == "zk_wipe" || f.kind == "zk_restore")
      start_history_loss(a, i);
    active_[i] = std::move(a);
    if (f.duration_ms == 0) end(i);
  }

  void end(std::size_t i) {
    auto it = active_.find(i);
    if (it == active_.end()) return;
    Applied& a = it->second;
    const PlannedFault& f = a.plan;
    const int d = f.target;
    if (f.kind.starts_with("holder_")) {
      // Not the daemons' schedule, which the checker reads for their faults.
      if (f.kind == "holder_kill") holders_->start(d);
      if (f.kind == "holder_pause") holders_->freeze(d, false);
      if (f.kind == "holder_cut") holders_->cut_off(d, false);
      holder_schedule_ << to_json_line(Fault{f.kind, fmt::format("h{}", d), a.start_us,
                                             wall_us_now(), f.describe()})
                       << '\n';
      holder_schedule_.flush();
      ++applied_;
      active_.erase(it);
      return;
    }
    if (f.kind == "net_stall")
      cluster_.stall(d, false);
    else if (f.kind == "net_delay")
      cluster_.delay(d, 0ms);
    else if (f.kind == "kill")
      cluster_.start_daemon(d, f.fresh_state);
    else if (f.kind == "term")
      cluster_.start_daemon(d, false);
    else if (f.kind == "pause")
      cluster_.freeze(d, false);
    else if (f.kind == "zk_kill")
      cluster_.zk_start(a.zk_server);
    else if (f.kind == "zk_pause")
      cluster_.zk_freeze(f.target, false, a.zk_server);
    else if (f.kind == "clock_step" || f.kind == "clock_slew")
      cluster_.set_clock_offset_ms(d, 0);  // NTP steps it right
    else if (f.kind == "disk_unwritable")
      cluster_.state_unwritable(d, false);
    else if (f.kind == "disk_full")
      cluster_.state_full(d, false);
    if (awaits_runbook(a)) return;
    const bool zk = f.kind.starts_with("zk_");
    const std::int64_t end_us = f.kind == "net_lose_reply" || f.kind == "seq_lose_reply"
                                    ? a.start_us + f.amount * 1000
                                    : wall_us_now();
    const bool cluster_wide = f.kind == "floor_raise" || f.kind == "seq_raise";
    const std::string target = zk             ? fmt::format("zk{}", a.zk_server)
                               : cluster_wide ? std::string("cluster")
                                              : fmt::format("d{}", d);
    Fault done{f.kind, target, a.start_us, end_us, f.describe() + a.note};
    if (f.kind == "floor_raise") end_floor(a, done);
    if (f.kind == "seq_raise") end_seq_raise(a, done);
    schedule_ << to_json_line(done) << '\n';
    schedule_.flush();
    ++applied_;
    active_.erase(it);
  }

  // A slewing clock moves a little on every tick; a floor's command that
  // has exited ends its fault.
  void tick() {
    std::vector<std::size_t> floors_done;
    for (auto& [i, a] : active_) {
      if (a.floor_command && !a.floor_command->running()) floors_done.push_back(i);
      if (a.end_due && a.runbook.wait_for(0s) == std::future_status::ready)
        floors_done.push_back(i);
    }
    for (const std::size_t i : floors_done) end(i);
    for (auto& [i, a] : active_) {
      if (a.plan.kind != "clock_slew") continue;
      const std::int64_t now = wall_us_now();
      const std::int64_t drift_ms = (now - a.slew_from_us) * a.plan.amount / 1'000'000 / 1000;
      if (drift_ms == 0) continue;
      cluster_.set_clock_offset_ms(a.plan.target,
                                   cluster_.clock_offset_ms(a.plan.target) + drift_ms);
      a.slew_from_us = now;
    }
  }

  int applied() const { return applied_; }

  // At the end of the run: the runbooks still going are waited for, and
  // their faults ended (the checker must know of every loss).
  void finish() {
    std::vector<std::size_t> due;
    for (auto& [i, a] : active_) {
      if (a.runbook.valid()) a.runbook.wait(), due.push_back(i);
    }
    for (const std::size_t i : due) end(i);
  }

 private:
  struct Applied {
    PlannedFault plan;
    std::int64_t start_us;
    std::int64_t slew_from_us;
    int zk_server;
    // floor_raise, seq_raise: `snowflaked pool floor` or `seq raise`
    // running, and the floor it sets.
    std::unique_ptr<test::ChildProcess> floor_command;
    std::uint64_t above_id = 0;
    std::string note{};  // zk_wipe, zk_restore: what the runbook did
    std::future<RunbookOutcome> runbook{};
    bool end_due = false;  // the planned end has come; the runbook goes on
  };

  // A sequence raised past the numbers daemons hold in their buffers: above
  // the highest the load has been given, by the plan's amount.
  void start_seq_raise(Applied& a, std::size_t i) {
    const auto& q = kChaosSequences[static_cast<std::size_t>(a.plan.target)];
    a.above_id = std::max(load_.highest_number(static_cast<std::size_t>(a.plan.target)), q.start) +
                 static_cast<std::uint64_t>(a.plan.amount);
    a.floor_command = cluster_.raise_sequence(q.tag, a.above_id, command_timeout(a.plan),
                                              fmt::format("seq-raise-{}", i));
  }

  // ZooKeeper loses its data, every server at once; the runbook (on a
  // thread of its own) does the rest, and the fault ends with it.
  void start_history_loss(Applied& a, std::size_t i) {
    const auto start_runbook = [&] {
      a.runbook = runbook_.start(
          a.plan.kind,
          std::chrono::steady_clock::now() + std::chrono::milliseconds(a.plan.duration_ms), i);
    };
    runbook_.take_baseline();  // before the loss: a loss counted after is this one
    if (a.plan.kind == "zk_wipe") {
      cluster_.zk_wipe();
      start_runbook();
      return;
    }
    // The runbook's form that holds on a busy machine (docs/operations.md):
    // ZooKeeper's port closed to the daemons until `cluster fence` has
    // landed (the runbook opens it). With the daemons reconnecting beside
    // the command, it must land within restore_grace_ms of ZooKeeper's
    // return, 1 s with these leases: a CI run's landed 1.1 s after, and a
    // fresh daemon handed out numbers of the restored node's (seed 3) --
    // the limit the runbook documents, not a fault it covers.
    for (int d = 0; d < cluster_.daemons(); ++d) cluster_.stall(d, true);
    if (!cluster_.zk_restore(start_runbook)) {
      for (int d = 0; d < cluster_.daemons(); ++d) cluster_.stall(d, false);
      a.note = ": no backup to restore";
    }
  }

  // At its planned end, the fault waits for its runbook.
  bool awaits_runbook(Applied& a) {
    if (!a.runbook.valid()) return false;
    if (a.runbook.wait_for(0s) != std::future_status::ready) {
      a.end_due = true;
      return true;
    }
    RunbookOutcome done = a.runbook.get();
    a.note += done.note;
    for (const Fault& raise : done.raises) schedule_ << to_json_line(raise) << '\n';
    return false;
  }

  void end_seq_raise(Applied& a, Fault& done) {
    done.tag = kChaosSequences[static_cast<std::size_t>(a.plan.target)].tag;
    done.detail += fmt::format(": \"{}\"", done.tag);
    end_command(a, done);
    done.end_us = std::max(done.end_us, done.confirmed_us);
  }

  // What `pool floor` or `seq raise` is given to confirm: the fault's time
  // but a second, and at least half a second (a fault clamped short by the
  // quiet stretch must not make a negative --timeout).
  static std::chrono::milliseconds command_timeout(const PlannedFault& f) {
    return std::chrono::milliseconds(std::max<std::int64_t>(500, f.duration_ms - 1000));
  }

  // The command's outcome: confirmed once it exited 0, at the moment that
  // was seen, never earlier. The planned end may come while it still
  // waits for a daemon; it is given 5 s more, and a confirmation then dates
  // from then (a run recorded the planned end instead, and the checker
  // rightly flagged the numbers a daemon handed out before it acknowledged).
  void end_command(Applied& a, Fault& done) {
    const auto status = a.floor_command->wait_for_exit(5s);
    if (!status) a.floor_command->send_signal(SIGKILL);
    done.above_id = a.above_id;
    const bool confirmed = status && status->code == 0 && status->signal == 0;
    done.confirmed_us = confirmed ? std::max(done.end_us, wall_us_now()) : 0;
    done.detail +=
        fmt::format(" above {}, {}", a.above_id,
                    confirmed ? std::string("confirmed")
                              : fmt::format("not confirmed ({})", status ? status->code : -1));
  }

  // A migration: the old system's last ID is the chaos layout's largest at
  // the cluster's time + amount; the command gets the fault's duration to
  // confirm.
  void start_floor(Applied& a, std::size_t i) {
    const auto layout = IdLayout::create(cluster_.layout(), cluster_.layout().epoch_ms).value();
    a.above_id = layout
                     .compose(a.start_us / 1000 + cluster_.base_offset_ms() + a.plan.amount, 0,
                              layout.max_worker_id(), layout.max_sequence())
                     .value();
    a.floor_command =
        cluster_.raise_floor(a.above_id, command_timeout(a.plan), fmt::format("floor-{}", i));
  }

  // Its record: confirmed when the command exited 0 (told by the first tick
  // after, or seen at the planned end: a little late, which only checks
  // fewer answers); the fault lasts until then, or until the floor's time
  // has passed, whichever is later.
  void end_floor(Applied& a, Fault& done) {
    done.detail += ":";
    end_command(a, done);
    const std::int64_t floor_passes_us = (a.start_us / 1000 + a.plan.amount + 1) * 1000;  // real
    done.end_us = std::max({done.end_us, floor_passes_us, done.confirmed_us});
  }
  ChaosCluster& cluster_;
  const ChaosLoad& load_;
  std::ofstream& schedule_;
  ChaosHolders* holders_;  // nullptr: none (no holder_* fault is planned then)
  std::ofstream& holder_schedule_;
  std::map<std::size_t, Applied> active_;
  int applied_ = 0;
  LostDataRunbook runbook_;
};

// The daily sequence's periods on either side of the cluster's midnight.
std::pair<std::string, std::string> days_around_midnight(const ChaosCluster& cluster) {
  const auto rule = PeriodRule::make(PeriodReset::daily, kChaosDaily.zone).value();
  const std::int64_t midnight = cluster.midnight_real_ms() + cluster.base_offset_ms();
  return {rule.period_at(midnight - 1).key, rule.period_at(midnight).key};
}

// "" if the daily sequence handed out numbers of both days; else why the
// run did not check what it is for (its boundary not inside the load).
std::string crossed_midnight(const CheckReport& report,
                             const std::pair<std::string, std::string>& days) {
  std::string missing;
  for (const auto& day : {days.first, days.second}) {
    const auto s = report.sequences.find(std::string(kChaosDaily.tag) + "@" + day);
    if (s == report.sequences.end() || s->second.numbers == 0) missing += " " + day;
  }
  return missing.empty() ? std::string()
                         : fmt::format(
                               "FAILED: \"{}\" handed out no number of{}: its midnight "
                               "was not inside the load\n",
                               kChaosDaily.tag, missing);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::filesystem::create_directories(o.out);
  const bool tmpfs = enter_private_mounts();
  const int suspended = ::geteuid() == 0 ? o.suspended : 0;
  // The plan is the seed's alone: without root, disk-full faults are in it
  // but do nothing (plan.txt says so), so a seed replays the same elsewhere.
  const NemesisOptions nemesis{o.seed,
                               o.length,
                               o.daemons,
                               o.ensemble,
                               true,
                               o.faults,
                               o.mean_gap_ms,
                               /*static_workers=*/o.strategy == "static",
                               o.holders};
  const auto plan = plan_faults(nemesis);
  {
    std::ofstream p(o.out / "plan.txt");
    p << fmt::format(
        "seed {} length {} s daemons {} ({} of {} on suspended hosts{}) holders {} {} {} disk_full "
        "{} faults {} mean gap {} ms\n",
        o.seed, o.length.count() / 1000, o.daemons, suspended, o.suspended,
        suspended < o.suspended ? ": the rest needs root" : "", o.holders, o.strategy,
        o.ensemble ? "ensemble" : "standalone",
        tmpfs ? "yes" : "no: needs root, disk_full faults do nothing",
        o.faults.empty() ? std::string("all") : fmt::format("{}", fmt::join(o.faults, ",")),
        o.mean_gap_ms);
    for (const auto& f : plan) p << fmt::format("{:>8} ms  {}\n", f.at_ms, f.describe());
  }
  std::cout << fmt::format(
                   "chaos: seed {}, {} s, {} {} daemons on {} ZooKeeper, {} faults planned; "
                   "record in {}\n",
                   o.seed, o.length.count() / 1000, o.daemons, o.strategy,
                   o.ensemble ? "a 3-node" : "a standalone", plan.size(), o.out.string())
            << std::flush;

  std::vector<std::string> crashes;
  std::vector<Answer> holder_answers;
  std::int64_t reclaim_after_ms = kChaosReclaimAfterMs;
  // The daily sequence's midnight in the middle of the load (which starts
  // once the cluster is ready, a few seconds on).
  const auto midnight_in = 5s + o.length / 2;
  std::pair<std::string, std::string> days;  // the periods before and after it
  std::int64_t midnight_ms = 0;              // real time
  std::int64_t load_from_ms = 0;
  {
    ChaosCluster cluster({o.daemons, o.ensemble, o.strategy, o.out, tmpfs, o.worker_bits,
                          midnight_in, suspended, /*lease_holders=*/o.holders > 0});
    reclaim_after_ms = cluster.reclaim_after_ms();
    days = days_around_midnight(cluster);
    midnight_ms = cluster.midnight_real_ms();
    std::ofstream(o.out / "plan.txt", std::ios::app)
        << fmt::format("every clock {:+} ms off real time: midnight of {} ({} to {}) at real {}\n",
                       cluster.base_offset_ms(), kChaosDaily.zone, days.first, days.second,
                       format_iso8601_ms(cluster.midnight_real_ms()));
    if (!cluster.wait_ready(60s)) {
      std::cout << "chaos: FAILED: the cluster did not become ready (as many daemons ready as the "
                   "pool has worker IDs) within 60 s (see "
                << (o.out / "logs").string() << ")\n";
      return 1;
    }
    load_from_ms = test::wall_ms_now();
    HistoryWriter history(o.out / "history.jsonl", cluster.layout());
    std::ofstream schedule(o.out / "schedule.jsonl");
    std::ofstream holder_schedule(o.out / "holder_schedule.jsonl");
    std::unique_ptr<ChaosHolders> holders;
    if (o.holders > 0) {
      holders = std::make_unique<ChaosHolders>(cluster, o.holders, o.holder_programs, o.out);
    }
    ChaosLoad load(cluster, history, o.seed);
    Nemesis nemesis_runner(cluster, load, schedule, holders.get(), holder_schedule);

    struct Event {
      std::int64_t at_ms;
      std::size_t fault;
      bool end;
    };
    std::vector<Event> events;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      events.push_back({plan[i].at_ms, i, false});
      if (plan[i].duration_ms > 0) events.push_back({plan[i].at_ms + plan[i].duration_ms, i, true});
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.at_ms < b.at_ms; });
    const auto t0 = std::chrono::steady_clock::now();
    const auto since = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - t0)
          .count();
    };
    std::size_t next = 0;
    std::int64_t next_progress = 10'000;
    while (since() < o.length.count()) {
      while (next < events.size() && events[next].at_ms <= since()) {
        const Event& e = events[next++];
        e.end ? nemesis_runner.end(e.fault) : nemesis_runner.start(e.fault, plan[e.fault]);
      }
      nemesis_runner.tick();
      if (since() >= next_progress) {
        std::cout << fmt::format("chaos: {:>4} s: {} answers, {} faults done\n",
                                 next_progress / 1000, history.answers(), nemesis_runner.applied())
                  << std::flush;
        next_progress += 10'000;
      }
      std::this_thread::sleep_for(10ms);
    }
    nemesis_runner.finish();
    load.stop();
    if (holders) {
      // Before the daemons: a holder gives its lease back at SIGTERM.
      crashes = holders->shut_down();
      holder_answers = holders->answers();
    }
    for (auto& c : cluster.shut_down()) crashes.push_back(std::move(c));
  }

  std::ifstream history_in(o.out / "history.jsonl");
  std::ifstream schedule_in(o.out / "schedule.jsonl");
  History history = read_history(history_in);
  // The holders' IDs with the daemons': one ID space.
  std::uint64_t holder_ids = 0;
  std::map<int, std::uint64_t> ids_by_holder;
  const std::size_t holder_runs = holder_answers.size();
  for (Answer& a : holder_answers) {
    for (const IdRun& r : a.ids) holder_ids += r.count, ids_by_holder[a.daemon] += r.count;
    history.answers.push_back(std::move(a));
  }
  const auto schedule = read_schedule(schedule_in);
  const auto layout =
      IdLayout::create(chaos_layout(o.worker_bits), chaos_layout(o.worker_bits).epoch_ms).value();
  // A killed daemon's worker ID serves again within its down time, the
  // session's end and reclaim_after, plus 5 s for a start and the reaper's
  // and the standbys' heartbeats on two cores busy with ASan daemons.
  const ReclaimBound reclaim{kChaosSessionTimeoutMs + reclaim_after_ms + 5000,
                             kChaosSessionTimeoutMs};
  const CheckReport report = check(history, schedule, layout, reclaim);
  std::string text =
      fmt::format("seed {}: {} faults applied\n", o.seed, schedule.size()) + to_text(report);
  if (o.holders > 0) {
    text += fmt::format("holders: {} IDs made in {} holder run(s), checked with the daemons'\n",
                        holder_ids, holder_runs);
    // A holder that made no ID checked nothing of it.
    for (int h = 0; h < o.holders; ++h) {
      if (ids_by_holder[kHolderDaemons + h] == 0)
        text += fmt::format("FAILED: lease holder h{} made no ID\n", h);
    }
  }
  for (const auto& c : crashes) text += "CRASH: " + c + "\n";
  std::string crossed = crossed_midnight(report, days);
  if (!crossed.empty() && load_from_ms > midnight_ms) {
    crossed += fmt::format("  (the cluster was ready {} ms after it: a slow start)\n",
                           load_from_ms - midnight_ms);
  }
  text += crossed;
  std::ofstream(o.out / "report.txt") << text;
  std::cout << text << "record: " << o.out.string() << '\n';
  bool holders_ok = true;
  for (int h = 0; h < o.holders; ++h)
    holders_ok = holders_ok && ids_by_holder[kHolderDaemons + h] > 0;
  return report.ok() && crashes.empty() && crossed.empty() && holders_ok ? 0 : 1;
}
