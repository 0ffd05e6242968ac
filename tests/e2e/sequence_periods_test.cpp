// Sequences that restart each period (`seq create --reset daily
// --time-zone Z --template T`) through the real snowflaked, across a local
// midnight on a DST day: ZooKeeper and the daemons run with their wall
// clocks set (libfaketime) some seconds before it, under load from both
// daemons. No printed number twice, each period from its start value, each
// daemon's answers in period order, none refused or slower than
// sequences.max_wait_ms (the next period's first range is taken before the
// boundary); the same with one daemon's clock ahead inside max_skew_ms; that
// daemon refused with clock_skew once its clock is out of it; and an ended
// period's node removed after its retention, by ZooKeeper's clock, without
// being read as a loss.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr std::int64_t kMaxWaitMs = 1000;  // sequences.max_wait_ms of these daemons

// One answer of the load, as the client saw it.
struct PeriodAnswer {
  int daemon = 0;
  std::int64_t sent_ms = 0;  // real time
  std::int64_t took_ms = 0;
  unsigned status = 0;
  std::string id, number, period, error;
};

// A ZooKeeper and daemons whose wall clocks read `start_iso` now.
struct FakedCluster {
  // `coordinator`: settings of the daemons' that differ from the suite's.
  explicit FakedCluster(const std::string& start_iso, const std::vector<std::int64_t>& ahead_ms,
                        const json& coordinator = json::object())
      : offset_ms(iso_ms(start_iso) - wall_ms_now()),
        zk_clock(clocks.path() / "zk", offset_text(offset_ms)),
        zk({}, zk_clock.jvm_env()) {
    for (std::size_t i = 0; i < ahead_ms.size(); ++i) {
      daemon_clocks.push_back(std::make_unique<WallClockOffset>(
          clocks.path() / ("d" + std::to_string(i)), offset_text(offset_ms + ahead_ms[i])));
      states.push_back(std::make_unique<TempDir>());
      json patch = {{"sequences", {{"max_wait_ms", kMaxWaitMs}}},
                    {"coordinator", {{"max_skew_ms", 2000}}}};
      patch["coordinator"].update(coordinator);
      daemons.push_back(std::make_unique<Daemon>(
          cluster_config(zk.hosts(), "recycle", states.back()->path(), patch).dump(), "127.0.0.1:0",
          daemon_clocks.back()->env()));
    }
  }

  static std::int64_t iso_ms(const std::string& iso) {
    std::tm tm{};
    std::istringstream(iso) >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
    return static_cast<std::int64_t>(timegm(&tm)) * 1000;
  }
  // Every clock moved on by `ms` (the daemons' relative offsets kept).
  void jump(std::int64_t ms, const std::vector<std::int64_t>& ahead_ms) {
    offset_ms += ms;
    zk_clock.set_ms(offset_ms);
    for (std::size_t i = 0; i < daemon_clocks.size(); ++i)
      daemon_clocks[i]->set_ms(offset_ms + ahead_ms[i]);
  }
  // Real time at which the cluster's clock reads `iso`.
  std::int64_t real_ms_at(const std::string& iso) const { return iso_ms(iso) - offset_ms; }

  TempDir clocks;
  std::int64_t offset_ms;
  WallClockOffset zk_clock;
  ZooKeeperServer zk;
  std::vector<std::unique_ptr<WallClockOffset>> daemon_clocks;
  std::vector<std::unique_ptr<TempDir>> states;
  std::vector<std::unique_ptr<Daemon>> daemons;
};

// Each daemon asked in turn by a thread of its own until real time `until_ms`
// (at most 200,000 answers each); what came back, in send order per daemon.
// Before real time `full_from_ms` at most one request every 5 ms a thread:
// the daemons may be ready two minutes before the boundary, and a fast
// machine at full speed reached the cap before it (one period seen).
std::vector<PeriodAnswer> load(FakedCluster& c, std::int64_t full_from_ms, std::int64_t until_ms) {
  std::vector<std::vector<PeriodAnswer>> each(c.daemons.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < c.daemons.size(); ++i) {
    threads.emplace_back([&, i] {
      const unsigned short port = c.daemons[i]->port();
      auto next_send = std::chrono::steady_clock::now();
      while (wall_ms_now() < until_ms && each[i].size() < 200'000) {
        if (wall_ms_now() < full_from_ms) {
          // Paced, not waited on: a load of a steady rate until the window.
          std::this_thread::sleep_until(next_send);
          next_send += std::chrono::milliseconds(5);
        }
        PeriodAnswer a;
        a.daemon = static_cast<int>(i);
        a.sent_ms = wall_ms_now();
        const auto r = http_get(port, "/seq/invoice");
        a.took_ms = wall_ms_now() - a.sent_ms;
        if (r) {
          a.status = r->status;
          const auto body = json::parse(r->body, nullptr, false);
          if (r->status == 200 && body.is_object()) {
            a.id = body.value("id", "");
            a.number = body.value("number", "");
            a.period = body.value("period", "");
          } else if (body.is_object()) {
            a.error = body.value("error", "") + ": " + body.value("message", "");
          }
        }
        each[i].push_back(std::move(a));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<PeriodAnswer> all;
  for (auto& v : each) all.insert(all.end(), v.begin(), v.end());
  return all;
}

// The first answer (200) of every daemon: the tag is served on each.
std::vector<PeriodAnswer> first_answers(FakedCluster& c) {
  std::vector<PeriodAnswer> out;
  for (std::size_t i = 0; i < c.daemons.size(); ++i) {
    std::optional<HttpReply> r;
    INFO(c.daemons[i]->process().stderr_text());
    REQUIRE(eventually(
        [&] {
          r = http_get(c.daemons[i]->port(), "/seq/invoice");
          return r && r->status == 200;
        },
        20s));
    const auto body = json::parse(r->body);
    out.push_back({static_cast<int>(i), wall_ms_now(), 0, 200, body["id"], body["number"],
                   body["period"], ""});
  }
  return out;
}

// The first answer of `d` to /seq/invoice that is not 503 clock_skew: a
// clock stepped back, once the daemon has found it so.
std::optional<HttpReply> first_past_clock_skew(const Daemon& d) {
  std::optional<HttpReply> r;
  REQUIRE(eventually(
      [&] {
        r = http_get(d.port(), "/seq/invoice");
        return r && error_of(r) != "clock_skew";
      },
      20s));
  return r;
}

// What the load must show, whichever clocks: every answer a 200 within
// max_wait_ms, no printed number twice, each period from 1 and printed with
// its own date, each daemon's answers in period order, both periods seen.
void check_answers(const std::vector<PeriodAnswer>& answers, const std::string& before,
                   const std::string& after, const std::string& boundary, FakedCluster& c) {
  const std::size_t daemons = c.daemons.size();
  std::set<std::string> ids;
  std::map<std::string, std::set<std::int64_t>> numbers;
  std::map<int, std::string> last_period;
  std::int64_t slowest = 0;     // across the boundary
  std::size_t refused = 0;      // across the boundary
  std::size_t unavailable = 0;  // before it: a loaded machine's ZooKeeper that stalled
  std::string refusals;
  for (const auto& a : answers) {
    // Across the boundary: from 5 s before it (both periods ready) to 5 s
    // after. Before that window the daemons' ranges are still growing to
    // the rate (each a ZooKeeper write) and a stalled ZooKeeper shows.
    const std::int64_t from_boundary = a.sent_ms - c.real_ms_at(boundary);
    const bool across = from_boundary > -5000 && from_boundary < 5000;
    if (across) slowest = std::max(slowest, a.took_ms);
    if (a.status != 200) {
      refusals += fmt::format("daemon {}, sent {} ms after the boundary, after {} ms: {} {}\n",
                              a.daemon, from_boundary, a.took_ms, a.status, a.error);
      if (across) ++refused;
      if (!across && a.error.starts_with("sequence_unavailable")) ++unavailable;
      continue;
    }
    const std::int64_t n = std::stoll(a.number);
    const std::string date = a.period.substr(0, 4) + a.period.substr(5, 2) + a.period.substr(8, 2);
    CHECK(a.id == fmt::format("INV-{}-{:06}", date, n));
    CHECK(ids.insert(a.id).second);
    numbers[a.period].insert(n);
    CHECK(a.period >= last_period[a.daemon]);  // never back to the day before
    last_period[a.daemon] = a.period;
  }
  INFO(refusals);
  CHECK(refused == 0);
  CHECK(slowest < kMaxWaitMs);
  CHECK(refused + unavailable == answers.size() - ids.size());  // no other refusal
  CHECK(unavailable * 100 < answers.size());
  REQUIRE(numbers.size() == 2);
  CHECK(numbers.begin()->first == before);
  CHECK(numbers.rbegin()->first == after);
  for (const auto& [period, seen] : numbers) {
    INFO(period);
    // From its start value; a daemon whose first range of the period could
    // not be named in its holder node (a ZooKeeper request failed under
    // load) leaves it unused, and says so.
    std::string logs;
    for (auto& d : c.daemons) logs += d->process().stderr_text();
    const bool first_range_a_gap =
        logs.find(fmt::format("\"invoice@{}\": [1, ", period)) != std::string::npos;
    INFO(logs);
    CHECK((*seen.begin() == 1 || first_range_a_gap));
  }
  for (std::size_t d = 0; d < daemons; ++d) CHECK(last_period[static_cast<int>(d)] == after);
  CHECK(answers.size() > 200);
}

// The period's first answer from daemon `d` (real send time), or INT64_MAX.
std::int64_t first_sent_in(const std::vector<PeriodAnswer>& answers, int d,
                           const std::string& period) {
  std::int64_t first = INT64_MAX;
  for (const auto& a : answers) {
    if (a.daemon == d && a.period == period) first = std::min(first, a.sent_ms);
  }
  return first;
}

// The load must start before the boundary: a machine too slow to start
// the cluster in the time given fails here, saying so.
void ready_before(const FakedCluster& c, const std::string& iso) {
  INFO("the daemons served their first numbers too late (a loaded machine)");
  REQUIRE(wall_ms_now() < c.real_ms_at(iso));
}

void created(const Daemon& d, const std::vector<std::string>& args) {
  RunResult r;
  // Tried again only when it made nothing: ZooKeeper (slow to start with a
  // faked clock on a loaded machine) not reached.
  REQUIRE(eventually(
      [&] {
        r = run_seq(d, args);
        return r.status.code != 1 || r.err.find("cannot reach ZooKeeper") == std::string::npos;
      },
      60s));
  INFO(r.out << r.err);
  REQUIRE(r.status.code == 0);
}

json sequence_listed(const Daemon& d, const std::string& tag) {
  const auto listed = run_seq(d, {"list", "--json"});
  REQUIRE(listed.status.code == 0);
  for (const auto& row : json::parse(listed.out)) {
    if (row["tag"] == tag) return row;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "a daily sequence across a skipped midnight (Havana, 2026-03-08): two daemons under load, "
    "no number twice, each day from 1, none waits, the ended day removed after its retention, and "
    "a day raised like a tag",
    "[sequence][period]") {
  const std::vector<std::int64_t> ahead{0, 0};
  // Havana's clocks go from 2026-03-07 23:59:59 to 2026-03-08 01:00:00
  // (05:00 UTC): the new day begins at the step, a day of 23 hours.
  FakedCluster c("2026-03-08T04:59:15Z", ahead);
  created(*c.daemons[0],
          {"create", "invoice", "--reset", "daily", "--time-zone", "America/Havana", "--template",
           "INV-{yyyy}{MM}{dd}-{n:06}", "--step", "20", "--retention", "0s"});
  auto answers = first_answers(c);
  ready_before(c, "2026-03-08T04:59:57Z");
  const auto loaded =
      load(c, c.real_ms_at("2026-03-08T04:59:55Z"), c.real_ms_at("2026-03-08T05:00:06Z"));
  answers.insert(answers.end(), loaded.begin(), loaded.end());
  check_answers(answers, "2026-03-07", "2026-03-08", "2026-03-08T05:00:00Z", c);

  // What /status and /metrics say of it: by period.
  const auto status = json::parse(http_get(c.daemons[0]->port(), "/status")->body);
  const auto& invoice = status["sequences"]["tags"]["invoice"];
  CHECK(invoice["reset"] == "daily");
  CHECK(invoice["time_zone"] == "America/Havana");
  CHECK(invoice["period"] == "2026-03-08");
  CHECK(invoice["periods"]["2026-03-08"]["ready"] == true);
  CHECK(invoice["periods"]["2026-03-08"]["next_begins"] == "2026-03-09T04:00:00.000Z");
  const auto metrics = http_get(c.daemons[0]->port(), "/metrics")->body;
  CHECK(metrics.find("snowflake_seq_numbers_total{tag=\"invoice\",period=\"2026-03-08\"}") !=
        std::string::npos);

  const json before = sequence_listed(*c.daemons[0], "invoice");
  REQUIRE(before["periods"].size() == 2);
  CHECK(before["removed_through"].is_null());

  // Every clock 3 minutes on: the day before is over on every clock within
  // the skew bound and the margin, and its retention (0 s) has passed by
  // ZooKeeper's clock: a daemon removes it, and no daemon reads that as a
  // loss (nothing is frozen; the new day goes on from where it was).
  c.jump(180'000, ahead);
  INFO(c.daemons[0]->process().stderr_text() << c.daemons[1]->process().stderr_text());
  REQUIRE(eventually(
      [&] { return sequence_listed(*c.daemons[0], "invoice")["periods"].size() == 1; }, 30s));
  const json after = sequence_listed(*c.daemons[0], "invoice");
  CHECK(after["removed_through"] == "2026-03-07");
  CHECK(after["periods"][0]["period"] == "2026-03-08");
  std::set<std::int64_t> before_jump;
  for (const auto& a : answers) {
    if (a.period == "2026-03-08") before_jump.insert(std::stoll(a.number));
  }
  for (auto& d : c.daemons) {
    const auto r = http_get(d->port(), "/seq/invoice");
    REQUIRE(r);
    INFO(r->body << d->process().stderr_text());
    REQUIRE(r->status == 200);
    const auto body = json::parse(r->body);
    CHECK(body["period"] == "2026-03-08");
    CHECK_FALSE(before_jump.contains(std::stoll(body["number"].get<std::string>())));
    CHECK(d->process().stderr_text().find("frozen") == std::string::npos);
  }

  // One period is raised like a tag (what thaws it after ZooKeeper lost
  // some history): once `seq raise TAG@KEY` exits 0, no daemon hands out a
  // number of that day at or below the floor.
  const auto raised = run_seq(*c.daemons[0], {"raise", "invoice@2026-03-08", "--above", "500000"});
  INFO(raised.out << raised.err);
  REQUIRE(raised.status.code == 0);
  for (auto& d : c.daemons) {
    const auto r = http_get(d->port(), "/seq/invoice");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(std::stoll(json::parse(r->body)["number"].get<std::string>()) > 500'000);
  }
}

TEST_CASE(
    "a daily sequence across a 25-hour day's end (Santiago, 2026-04-05) with one daemon's clock "
    "1.5 s ahead: it switches first, no number twice, 503 clock_skew once out of the bound, 503 "
    "period_exhausted past --max",
    "[sequence][period]") {
  std::vector<std::int64_t> ahead{0, 1500};
  // Santiago's clocks go back from 2026-04-04 24:00 to 23:00 (03:00 UTC):
  // the 4th has 25 hours, and the 5th begins at 04:00 UTC.
  FakedCluster c("2026-04-05T03:59:15Z", ahead);
  created(*c.daemons[0],
          {"create", "invoice", "--reset", "daily", "--time-zone", "America/Santiago", "--template",
           "INV-{yyyy}{MM}{dd}-{n:06}", "--step", "20"});
  auto answers = first_answers(c);
  ready_before(c, "2026-04-05T03:59:57Z");
  const auto loaded =
      load(c, c.real_ms_at("2026-04-05T03:59:55Z"), c.real_ms_at("2026-04-05T04:00:06Z"));
  answers.insert(answers.end(), loaded.begin(), loaded.end());
  check_answers(answers, "2026-04-04", "2026-04-05", "2026-04-05T04:00:00Z", c);
  // The daemon ahead served the 5th first, about 1.5 s before the other.
  const std::int64_t ahead_first = first_sent_in(answers, 1, "2026-04-05");
  const std::int64_t other_first = first_sent_in(answers, 0, "2026-04-05");
  CHECK(ahead_first < other_first);
  CHECK(other_first - ahead_first > 1000);

  // Out of the bound (2 s): refused with the clocks' code, and served again
  // once back.
  ahead[1] = 5000;
  c.jump(0, ahead);
  REQUIRE(eventually(
      [&] { return error_of(http_get(c.daemons[1]->port(), "/seq/invoice")) == "clock_skew"; },
      20s));
  CHECK(http_get(c.daemons[0]->port(), "/seq/invoice")->status == 200);
  ahead[1] = 1500;
  c.jump(0, ahead);
  CHECK(eventually([&] { return http_get(c.daemons[1]->port(), "/seq/invoice")->status == 200; },
                   20s));

  // A period's --max: its numbers up to it, then 503 period_exhausted until
  // the next period (Retry-After: the 6th begins at 04:00 UTC, about a day
  // on), never a number wider than the template.
  created(*c.daemons[0], {"create", "small", "--reset", "daily", "--time-zone", "America/Santiago",
                          "--template", "S{yy}{MM}{dd}-{n:02}", "--max", "3", "--step", "2"});
  std::vector<std::string> small;
  std::optional<HttpReply> r;
  REQUIRE(eventually(
      [&] {
        r = http_get(c.daemons[0]->port(), "/seq/small");
        if (r && r->status == 200) small.push_back(json::parse(r->body)["id"]);
        return r && r->status != 200 && error_of(r) != "sequence_unavailable";
      },
      20s));
  INFO(r->body);
  CHECK(error_of(r) == "period_exhausted");
  CHECK(r->status == 503);
  CHECK(std::stoll(r->headers["retry-after"]) > 80'000);
  CHECK(small == std::vector<std::string>{"S260405-01", "S260405-02", "S260405-03"});
}

TEST_CASE(
    "a daily sequence: a daemon's clock stepped forward past the day's end keeps the day "
    "(ZooKeeper's "
    "clock says it is not over), and serves it again once stepped back",
    "[sequence][period]") {
  std::vector<std::int64_t> ahead{0};
  FakedCluster c("2026-06-01T23:58:20Z", ahead);
  created(*c.daemons[0], {"create", "invoice", "--reset", "daily", "--time-zone", "UTC",
                          "--template", "INV-{yyyy}{MM}{dd}-{n:06}", "--step", "20"});
  const auto first = first_answers(c);
  REQUIRE(first[0].period == "2026-06-01");
  // NTP steps the clock 150 s on (to 00:00:4x, past the day's end plus the
  // skew bound and the margin): before the fix the daemon let go of the day
  // at its next pass, and answered period_closed once stepped back.
  ahead[0] = 150'000;
  c.jump(0, ahead);
  INFO(c.daemons[0]->process().stderr_text());
  // Until the daemon has judged the day: held (or, wrongly, let go of).
  REQUIRE(eventually(
      [&] {
        const std::string log = c.daemons[0]->process().stderr_text();
        return log.find(
                   "period \"invoice@2026-06-01\" is over by this daemon's clock but not "
                   "by ZooKeeper's") != std::string::npos ||
               log.find("period \"invoice@2026-06-01\" is over: let go of") != std::string::npos;
      },
      20s));
  ahead[0] = 0;
  c.jump(0, ahead);
  auto r = first_past_clock_skew(*c.daemons[0]);
  INFO(r->body);
  {
    INFO("the day ended before the test got here (a loaded machine)");
    REQUIRE(wall_ms_now() < c.real_ms_at("2026-06-02T00:00:00Z"));
  }
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["period"] == "2026-06-01");
  CHECK(std::stoll(json::parse(r->body)["number"].get<std::string>()) >
        std::stoll(first[0].number));
}

TEST_CASE(
    "a daily sequence: a daemon's clock stepped to the end of tomorrow between two heartbeats "
    "dates no number tomorrow (503 clock_skew at once), opens no later period, and serves today "
    "again once stepped back",
    "[sequence][period]") {
  std::vector<std::int64_t> ahead{0};
  // Heartbeats 20 s apart: the step comes and goes between two, as it
  // would between two of the default 3 minutes. No restore grace: a young
  // daemon whose clock is a day off its cluster create's vouch holds its
  // periods for the grace, which would hide the step's effect.
  FakedCluster c("2026-06-01T12:00:00Z", ahead,
                 {{"heartbeat_interval_ms", 20'000},
                  {"lease_timeout_ms", 60'000},
                  {"reclaim_after_ms", 90'000},
                  {"restore_grace_ms", 0}});
  created(*c.daemons[0], {"create", "invoice", "--reset", "daily", "--time-zone", "UTC",
                          "--template", "INV-{yyyy}{MM}{dd}-{n:06}", "--step", "20"});
  const auto first = first_answers(c);
  REQUIRE(first[0].period == "2026-06-01");
  // The clock stepped to 23:59:30 tomorrow (the day after's period within
  // a minute too), for 1.5 s. Before: the daemon made and served tomorrow,
  // made the day after, and the two pushed today out of its lookup: 503
  // period_closed for today from then on.
  ahead[0] = FakedCluster::iso_ms("2026-06-02T23:59:30Z") - (wall_ms_now() + c.offset_ms);
  c.jump(0, ahead);
  const std::int64_t step_ends = wall_ms_now() + 1500;
  std::map<std::string, int> during;  // "200 <period>" or the error's code
  for (int i = 0; i < 2000 && wall_ms_now() < step_ends; ++i) {
    const auto r = http_get(c.daemons[0]->port(), "/seq/invoice");
    if (!r) continue;
    const auto body = json::parse(r->body, nullptr, false);
    ++during[r->status == 200 ? "200 " + body.value("period", "") : error_of(r)];
  }
  ahead[0] = 0;
  c.jump(0, ahead);
  std::string seen;
  for (const auto& [what, n] : during) seen += fmt::format("{}: {}\n", what, n);
  INFO(seen);
  INFO(c.daemons[0]->process().stderr_text());
  CHECK(during.size() == 1);
  CHECK(during["clock_skew"] > 0);
  auto r = first_past_clock_skew(*c.daemons[0]);
  INFO(r->body);
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["period"] == "2026-06-01");
  CHECK(std::stoll(json::parse(r->body)["number"].get<std::string>()) >
        std::stoll(first[0].number));
  // No later period was made: ZooKeeper has today's node alone.
  CHECK(c.daemons[0]->process().stderr_text().find("period 2026-06-02") == std::string::npos);

  // Stepped back two days: refused for the clock (not period_closed, which
  // says the period is over for good), and today served again after.
  ahead[0] = -2 * 86'400'000;
  c.jump(0, ahead);
  r = http_get(c.daemons[0]->port(), "/seq/invoice");
  INFO(r->body);
  CHECK(error_of(r) == "clock_skew");
  ahead[0] = 0;
  c.jump(0, ahead);
  REQUIRE(eventually(
      [&] {
        r = http_get(c.daemons[0]->port(), "/seq/invoice");
        return r && r->status == 200;
      },
      20s));
  CHECK(json::parse(r->body)["period"] == "2026-06-01");
}

TEST_CASE(
    "a daily sequence on a static daemon (no heartbeat checks its clock): served once ZooKeeper's "
    "clock is read, and 503 clock_skew at once when its clock is stepped two days on",
    "[sequence][period][static]") {
  ZooKeeperServer zk;
  TempDir state, clocks;
  WallClockOffset clock(clocks.path() / "d", "+0");
  // A zone where it is about noon now: no midnight during the test.
  const int utc_hour = static_cast<int>((wall_ms_now() / 3'600'000) % 24);
  const int east = 12 - utc_hour;  // hours east of UTC, -11..12
  const std::string zone = east == 0  ? std::string("Etc/GMT")
                           : east > 0 ? fmt::format("Etc/GMT-{}", east)
                                      : fmt::format("Etc/GMT+{}", -east);
  Daemon d(cluster_config(zk.hosts(), "static", state.path(),
                          {{"coordinator", {{"static_worker_id", 3}}},
                           {"sequences", {{"enabled", true}, {"max_wait_ms", kMaxWaitMs}}}})
               .dump(),
           "127.0.0.1:0", clock.env());
  REQUIRE(run_seq(d, {"create", "invoice", "--reset", "daily", "--time-zone", zone, "--template",
                      "INV-{yyyy}{MM}{dd}-{n:06}"})
              .status.code == 0);
  std::optional<HttpReply> r;
  INFO(d.process().stderr_text());
  REQUIRE(eventually(
      [&] {
        r = http_get(d.port(), "/seq/invoice");
        return r && r->status == 200;
      },
      20s));
  const std::string today = json::parse(r->body)["period"];
  clock.set_ms(2 * 86'400'000);
  r = http_get(d.port(), "/seq/invoice");
  INFO(r->body);
  CHECK(error_of(r) == "clock_skew");
  clock.set("+0");
  REQUIRE(eventually(
      [&] {
        r = http_get(d.port(), "/seq/invoice");
        return r && r->status == 200;
      },
      20s));
  CHECK(json::parse(r->body)["period"] == today);
}
