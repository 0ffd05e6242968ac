#include "runbook.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

#include "../support/wall_clock.hpp"

namespace snowflake::chaos {

using namespace std::chrono_literals;
using test::wall_us_now;

namespace {

// How long the runbook waits for daemons to notice, and for a raise to be
// confirmed (a daemon cut off drops what it held once back: up to 8 s).
constexpr auto kNoticeWithin = 20s;
constexpr auto kRaiseWithin = 30s;
// How long the restore's fence is tried again while it does not land.
constexpr auto kFenceWithin = 60s;
constexpr int kExitNoSequence = 2;  // seq raise on a tag ZooKeeper does not have

}  // namespace

std::future<RunbookOutcome> LostDataRunbook::start(
    const std::string& kind, std::chrono::steady_clock::time_point planned_end, std::size_t index) {
  // Each runbook its own loss's marks: a later loss's baseline moves
  // log_marks_ while this one may still wait.
  Marks marks;
  {
    std::lock_guard lock(mutex_);
    marks = log_marks_;
  }
  for (int d = 0; d < cluster_.daemons(); ++d) marks[d].run_at_start = cluster_.run(d);
  return std::async(std::launch::async, [this, kind, marks, planned_end, index] {
    return run(kind, marks, planned_end, index);
  });
}

RunbookOutcome LostDataRunbook::run(const std::string& kind, const Marks& marks,
                                    std::chrono::steady_clock::time_point planned_end,
                                    std::size_t index) {
  RunbookOutcome out;
  if (kind == "zk_restore") {
    // Started while ZooKeeper is down, the daemons' way to it closed (the
    // runner's start_history_loss): it lands the moment ZooKeeper answers;
    // its end (exit 1: the daemons could not confirm) opens the way.
    // Until the fence has landed, as the runbook's operator does with a
    // command that failed (a ZooKeeper server killed meanwhile: its
    // connection lost mid-fence); exit 1 once it printed the fence is the
    // daemons' confirmations missing, which the open port brings.
    const auto deadline = std::chrono::steady_clock::now() + kFenceWithin;
    int code = -1;
    for (int attempt = 1;; ++attempt) {
      std::string printed;
      code = cluster_.run_admin({"cluster", "fence", "--wait", "20000", "--timeout", "2000"},
                                fmt::format("cluster-fence-{}-{}", index, attempt), &printed);
      const bool landed = code == 0 || printed.find("is fenced until") != std::string::npos;
      if (landed || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(200ms);
    }
    for (int d = 0; d < cluster_.daemons(); ++d) cluster_.stall(d, false);
    out.note = fmt::format(
        ": cluster fence (started before ZooKeeper was back, the daemons' port closed until it "
        "ended) exited {}",
        code);
  }
  std::this_thread::sleep_until(planned_end);  // the plan's time for the daemons to notice
  out.note += await_noticed(marks);
  for (std::size_t q = 0; q < std::size(kChaosSequences); ++q) {
    out.raises.push_back(raise(q, kind, index));
  }
  raise_daily(kind, index, out);
  return out;
}

// The daily sequence as docs/operations.md says: each period the load was
// given numbers of raised past them (made above them if ZooKeeper lost it),
// the definition made again frozen first where it is gone, then thawed.
// `args` run again (ZooKeeper down a moment: a zk_kill meanwhile) until it
// exits 0 or `done_too`, for kRaiseWithin at most: its last exit code.
int LostDataRunbook::until_done(const std::vector<std::string>& args, const std::string& log_name,
                                int done_too) {
  const auto deadline = std::chrono::steady_clock::now() + kRaiseWithin;
  int code = -1;
  for (int attempt = 1; code != 0 && code != done_too; ++attempt) {
    if (attempt > 1) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(200ms);
    }
    code = cluster_.run_admin(args, fmt::format("{}-{}", log_name, attempt));
  }
  return code;
}

void LostDataRunbook::raise_daily(const std::string& after, std::size_t index,
                                  RunbookOutcome& out) {
  const std::string tag = kChaosDaily.tag;
  // Made again, frozen, if ZooKeeper lost it (exit 2: it is there): a
  // daemon may make a period again above what it held, never a definition.
  const int made = until_done(
      {"seq", "create", tag, "--reset", "daily", "--time-zone", kChaosDaily.zone, "--template",
       kChaosDaily.number_template, "--start", std::to_string(kChaosDaily.start), "--step",
       std::to_string(kChaosDaily.step), "--frozen"},
      fmt::format("runbook-{}-create-{}", index, tag), kExitNoSequence);
  if (made == 0) out.note += fmt::format(", \"{}\" made again frozen", tag);
  // The periods the load had numbers of, and every other one ZooKeeper
  // has (the next day's, made before midnight), each above the larger of
  // the load's numbers and what `seq list` says each run held of it.
  std::map<std::string, std::uint64_t> periods = load_.daily_highest();
  nlohmann::json listed;
  const auto deadline = std::chrono::steady_clock::now() + kRaiseWithin;
  for (int attempt = 1; !listed.is_array() && std::chrono::steady_clock::now() < deadline;
       ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(200ms);
    listed = nlohmann::json::parse(
        cluster_.admin_output({"seq", "list", "--json"},
                              fmt::format("runbook-{}-list-{}", index, attempt)),
        nullptr, false);
  }
  for (const auto& row : listed.is_array() ? listed : nlohmann::json::array()) {
    if (row.value("tag", "") != tag || !row.contains("periods")) continue;
    for (const auto& p : row["periods"]) {
      std::uint64_t& above = periods[p.value("period", "")];
      for (const auto& h : p.value("holders", nlohmann::json::array())) {
        const std::int64_t to = h.value("to", std::int64_t{0});
        if (to > 1) above = std::max(above, static_cast<std::uint64_t>(to - 1));
      }
    }
  }
  periods.erase("");
  bool all_raised = true;
  for (const auto& [period, highest] : periods) {
    const std::string name = tag + "@" + period;
    Fault f{"seq_raise", "cluster", wall_us_now(), 0, "", highest, 0, name};
    const int code =
        until_done({"seq", "raise", name, "--above", std::to_string(highest), "--timeout", "4000"},
                   fmt::format("runbook-{}-raise-{}", index, name));
    f.end_us = wall_us_now();
    f.confirmed_us = code == 0 ? f.end_us : 0;
    all_raised = all_raised && code == 0;
    f.detail =
        fmt::format("runbook after {}: seq raise \"{}\" above {}, {}", after, name, highest,
                    code == 0 ? std::string("confirmed") : fmt::format("not confirmed ({})", code));
    out.raises.push_back(f);
  }
  // Only now may a period be made from its start again; never while one
  // is not raised (its node may be missing: a thawed definition would make
  // it from its start).
  if (!all_raised) {
    out.note += fmt::format(", \"{}\" left frozen: a period's raise was not confirmed", tag);
    return;
  }
  const int thawed = until_done({"seq", "raise", tag, "--above", "0", "--timeout", "4000"},
                                fmt::format("runbook-{}-thaw-{}", index, tag));
  out.note += fmt::format(", \"{}\" thawed: exit {}", tag, thawed);
}

void LostDataRunbook::take_baseline() {
  for (int d = 0; d < cluster_.daemons(); ++d) {
    const LogMark mark{cluster_.run(d), cluster_.log_text(d).size(), -1};
    std::lock_guard lock(mutex_);
    log_marks_[d] = mark;
  }
}

std::string LostDataRunbook::await_noticed(const Marks& marks) {
  const auto deadline = std::chrono::steady_clock::now() + kNoticeWithin;
  std::vector<int> waiting;
  for (int d = 0; d < cluster_.daemons(); ++d) waiting.push_back(d);
  while (true) {
    std::erase_if(waiting, [&](int d) { return noticed(d, marks.at(d)); });
    if (waiting.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(100ms);  // a read of each log
  }
  return waiting.empty() ? std::string()
                         : fmt::format(", not noticed by d{} within {} s",
                                       fmt::join(waiting, ", d"), kNoticeWithin.count());
}

// As docs/operations.md tells the operator before any raise: the daemon
// logged `sequences: frozen` after the loss, then that its holder node says
// what it had handed out, or that it held no numbers; or it is a run
// started since the runbook did. (A run started between the baseline and
// the runbook's start may have lived through the loss: its whole log
// counts, and one that started after it and held nothing may not say so.) Neither its count of
// losses nor the fence it shows will do: both come before its sequences stop (a daemon with no
// worker ID showed the runbook's fence while it handed out a range the restore had forgotten, and
// noticed the loss 3 s later, after a raise had confirmed).
bool LostDataRunbook::noticed(int d, const LogMark& mark) {
  const int run = cluster_.run(d);
  if (run != mark.run_at_start) return true;
  if (!cluster_.is_up(d)) return false;  // stopped or frozen: it may hold numbers still
  const std::size_t from = mark.run == run ? mark.logged : 0;
  const std::string log = cluster_.log_text(d);
  const auto frozen = log.find("sequences: frozen", from);
  if (frozen == std::string::npos) return false;
  return log.find("this daemon's holder node says what it had handed out", frozen) !=
             std::string::npos ||
         log.find("this daemon held no numbers", frozen) != std::string::npos;
}

Fault LostDataRunbook::raise(std::size_t q, const std::string& after, std::size_t index) {
  const auto& seq = kChaosSequences[q];
  Fault f{"seq_raise", "cluster", wall_us_now(), 0, "", 0, 0, seq.tag};
  f.above_id = std::max(load_.highest_number(q), seq.start);
  const std::string above = std::to_string(f.above_id);
  const auto deadline = std::chrono::steady_clock::now() + kRaiseWithin;
  std::string how = "seq raise";
  int code = -1;
  for (int attempt = 1; code != 0 && std::chrono::steady_clock::now() < deadline; ++attempt) {
    code = cluster_.run_admin({"seq", "raise", seq.tag, "--above", above, "--timeout", "4000"},
                              fmt::format("runbook-{}-raise-{}-{}", index, seq.tag, attempt));
    if (code == kExitNoSequence) {  // ZooKeeper lost it, and no daemon made it again
      how = "seq create";
      code = cluster_.run_admin(seq_create_args(seq, f.above_id + 1),
                                fmt::format("runbook-{}-create-{}-{}", index, seq.tag, attempt));
    }
  }
  f.end_us = wall_us_now();
  f.confirmed_us = code == 0 ? f.end_us : 0;
  f.detail =
      fmt::format("runbook after {}: {} \"{}\" above {}, {}", after, how, seq.tag, f.above_id,
                  code == 0 ? std::string("confirmed") : fmt::format("not confirmed ({})", code));
  return f;
}

}  // namespace snowflake::chaos
