#include "runbook.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

#include "../support/http_client.hpp"
#include "../support/wall_clock.hpp"

namespace snowflake::chaos {

using namespace std::chrono_literals;
using test::wall_us_now;

namespace {

// The chaos config's fence: lease 1500 + margin 500 + skew 2000 ms.
constexpr std::int64_t kFenceMs = 4000;
// How long the runbook waits for daemons to notice, and for a raise to be
// confirmed (a daemon cut off drops what it held once back: up to 8 s).
constexpr auto kNoticeWithin = 20s;
constexpr auto kRaiseWithin = 30s;
// How long the restore's fence is tried again while it does not land.
constexpr auto kFenceWithin = 60s;
constexpr int kExitNoSequence = 2;  // seq raise on a tag ZooKeeper does not have

// A field of /status's `cluster`, null if absent.
const nlohmann::json& cluster_field(const nlohmann::json& status, const char* name,
                                    const char* sub = nullptr) {
  static const nlohmann::json none;
  if (!status.is_object() || !status.contains("cluster")) return none;
  const auto& cluster = status["cluster"];
  if (!cluster.is_object() || !cluster.contains(name)) return none;
  const auto& v = cluster[name];
  if (!sub) return v;
  return v.is_object() && v.contains(sub) ? v[sub] : none;
}

}  // namespace

std::future<RunbookOutcome> LostDataRunbook::start(
    const std::string& kind, std::int64_t loss_us,
    std::chrono::steady_clock::time_point planned_end, std::size_t index) {
  std::vector<int> runs;
  for (int d = 0; d < cluster_.daemons(); ++d) runs.push_back(cluster_.run(d));
  return std::async(std::launch::async, [this, kind, loss_us, runs, planned_end, index] {
    return run(kind, loss_us, runs, planned_end, index);
  });
}

RunbookOutcome LostDataRunbook::run(const std::string& kind, std::int64_t loss_us,
                                    std::vector<int> runs_at_loss,
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
  out.note += await_noticed(loss_us, runs_at_loss);
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
    // Unknown (down, frozen, no answer): its count proves nothing for this
    // loss, only its run or the fence it sees (noticed()).
    LossesSeen seen{cluster_.run(d), kCountUnknown};
    std::optional<test::HttpReply> reply;
    try {
      if (cluster_.is_up(d)) reply = test::http_get(cluster_.port(d), "/status");
    } catch (const std::exception&) {
    }
    if (reply && reply->status == 200) {
      const auto status = nlohmann::json::parse(reply->body, nullptr, false);
      const auto& losses = cluster_field(status, "history_losses");
      if (losses.is_number_unsigned()) seen.losses = losses.get<std::uint64_t>();
    }
    std::lock_guard lock(mutex_);
    losses_seen_[d] = seen;
  }
}

std::string LostDataRunbook::await_noticed(std::int64_t loss_us,
                                           const std::vector<int>& runs_at_loss) {
  const auto deadline = std::chrono::steady_clock::now() + kNoticeWithin;
  std::vector<int> waiting;
  for (int d = 0; d < cluster_.daemons(); ++d) waiting.push_back(d);
  while (true) {
    std::erase_if(waiting, [&](int d) { return noticed(d, loss_us, runs_at_loss); });
    if (waiting.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(100ms);  // a poll of /status
  }
  return waiting.empty() ? std::string()
                         : fmt::format(", not noticed by d{} within {} s",
                                       fmt::join(waiting, ", d"), kNoticeWithin.count());
}

bool LostDataRunbook::noticed(int d, std::int64_t loss_us, const std::vector<int>& runs_at_loss) {
  const int run = cluster_.run(d);
  if (run != runs_at_loss[static_cast<std::size_t>(d)]) return true;
  if (!cluster_.is_up(d)) return false;  // stopped or frozen: it may hold numbers still
  std::optional<test::HttpReply> reply;
  try {
    reply = test::http_get(cluster_.port(d), "/status");
  } catch (const std::exception&) {  // refused: it went down a moment ago
    return false;
  }
  if (!reply || reply->status != 200) return false;
  const auto status = nlohmann::json::parse(reply->body, nullptr, false);
  const auto& losses = cluster_field(status, "history_losses");
  {
    std::lock_guard lock(mutex_);
    LossesSeen& seen = losses_seen_[d];
    const std::uint64_t before = seen.run == run ? seen.losses : 0;
    if (losses.is_number_unsigned() && losses.get<std::uint64_t>() > before) {
      seen = {run, losses.get<std::uint64_t>()};
      return true;
    }
  }
  // Nothing of its own lost (it held nothing the loss took), but back on
  // ZooKeeper since: it sees a fence written after the loss (one from
  // before ended at most a fence's length after it was written, and losses
  // are further apart than that).
  const auto& until = cluster_field(status, "fence", "until_ms");
  // The fence is on the cluster's clock (the base offset ahead of real time).
  return until.is_number() &&
         until.get<std::int64_t>() >= loss_us / 1000 + cluster_.base_offset_ms() + kFenceMs / 2;
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
