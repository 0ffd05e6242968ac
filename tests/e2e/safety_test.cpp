// "Never a duplicate, under every fault we know": the real daemons, a real
// ZooKeeper, and the faults that broke the first build (docs/design.md,
// "Why two daemons never issue the same ID"): a daemon cut off whose clock jumps, a copied state
// directory, two daemons with one identity, two strategies on one root, a
// static daemon restarted with its clock set back. Each test loads the
// daemons while the fault happens and counts duplicates in all they issued.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/fault_proxy.hpp"
#include "../support/http_client.hpp"
#include "../support/id_fields.hpp"
#include "../support/id_load.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "snowflake/workers/recycle_pool.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Two worker IDs: a second daemon can only get the first one's.
const json kTwoWorkers = {{"layout", {{"worker_bits", 1}, {"sequence_bits", 21}}}};

std::int64_t time_ms(std::uint64_t id) { return default_layout_time_ms(id); }

std::int64_t newest(const std::vector<std::uint64_t>& ids) {
  std::int64_t t = 0;
  for (auto id : ids) t = std::max(t, time_ms(id));
  return t;
}

std::string describe(const std::map<std::string, int>& refusals) {
  std::string out;
  for (const auto& [code, n] : refusals) out += code + "=" + std::to_string(n) + " ";
  return out;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Prints a scenario's figures for the record (`e2e_tests "[safety]"` shows
// them) and returns them, for the failure message too.
std::string record(const std::string& figures) {
  std::cout << "figures: " << figures << std::endl;
  return figures;
}

#define FIGURES(text)      \
  INFO(record([&] {        \
    std::ostringstream o_; \
    o_ << text;            \
    return o_.str();       \
  }()))

ExitStatus exit_of(Daemon& d) {
  const auto status = d.process().wait_for_exit(20s);
  REQUIRE(status);
  return *status;
}

// Starts `n` recycle daemons on `zk`, each with a state directory of its
// own (kept in `dirs` for the test's life), appended to `daemons`.
void start_recycle_daemons(const ZooKeeperServer& zk, int n, const json& patch,
                           std::vector<std::unique_ptr<TempDir>>& dirs,
                           std::vector<std::unique_ptr<Daemon>>& daemons) {
  for (int i = 0; i < n; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
    daemons.push_back(std::make_unique<Daemon>(
        cluster_config(zk.hosts(), "recycle", dirs.back()->path(), patch).dump()));
  }
}

}  // namespace

TEST_CASE("time fence: a daemon cut off whose clock jumps 12 s ahead never overlaps the next owner",
          "[safety][fence]") {
  ZooKeeperServer zk;
  FaultProxy proxy(zk.port());
  TempDir filler_state, a_state, b_state, clocks;
  WallClockOffset a_clock(clocks.path() / "a");
  // The filler holds one worker ID, A (through the proxy) the other.
  Daemon filler(cluster_config(zk.hosts(), "recycle", filler_state.path(), kTwoWorkers).dump());
  wait_ready(filler);
  Daemon a(cluster_config(proxy.hosts(), "recycle", a_state.path(), kTwoWorkers).dump(),
           "127.0.0.1:0", a_clock.env());
  const auto worker = wait_ready(a);

  IdLoad load_a(a.port(), 200);
  REQUIRE(eventually([&] { return load_a.issued() > 10'000; }));
  // Right after a heartbeat, cut A off and step its clock forward.
  const auto beats = metric(a, "snowflake_heartbeats_total");
  REQUIRE(eventually([&] { return metric(a, "snowflake_heartbeats_total") > beats; }));
  proxy.stall();
  a_clock.set("+12s");
  // Everything A may have stamped from here on lies before this bound.
  const std::int64_t a_could_reach = wall_ms_now() + 12'000 + 1500;
  const std::size_t issued_before_jump = load_a.issued();

  // B reaps A's worker ID once A's session and lease are long gone, and is
  // loaded until its clock has passed every instant A could have stamped.
  Daemon b(cluster_config(zk.hosts(), "recycle", b_state.path(), kTwoWorkers).dump());
  const auto start_b = std::chrono::steady_clock::now();
  CHECK(wait_ready(b, 30s) == worker);
  const auto b_ready_after = std::chrono::steady_clock::now() - start_b;
  IdLoad load_b(b.port(), 200);
  REQUIRE(eventually([&] { return wall_ms_now() > a_could_reach + 200; }, 30s));
  load_b.stop();
  load_a.stop();

  const auto& ids_a = load_a.ids();
  const auto& ids_b = load_b.ids();
  FIGURES("time fence: A issued " << ids_a.size() << " (" << ids_a.size() - issued_before_jump
                                  << " after the jump), refusals " << describe(load_a.refusals())
                                  << "; B issued " << ids_b.size() << ", ready "
                                  << seconds(b_ready_after) << " s after it started; duplicates "
                                  << duplicates(ids_a, ids_b));
  CHECK(ids_b.size() > 100'000);
  CHECK(newest(ids_b) > newest(ids_a));
  CHECK(duplicates(ids_a, ids_b) == 0);
  // A refused once its clock passed its fence, not only once its lease ran out.
  CHECK(load_a.refusals().contains("lease_expired"));
  CHECK(newest(ids_a) < a_could_reach - 12'000);
}

TEST_CASE("a copied state directory proves nothing: the copy claims another worker ID",
          "[safety][takeover]") {
  ZooKeeperServer zk;
  TempDir a_state, parent;
  // Heartbeats 5 s apart: a daemon learns late that its worker ID was taken.
  const json slow_heartbeat = {{"coordinator",
                                {{"heartbeat_interval_ms", 5000},
                                 {"lease_timeout_ms", 10000},
                                 {"reclaim_after_ms", 15000},
                                 {"safety_margin_ms", 1000}}}};
  Daemon a(cluster_config(zk.hosts(), "recycle", a_state.path(), slow_heartbeat).dump());
  const auto worker_a = wait_ready(a);
  IdLoad load_a(a.port(), 200);
  REQUIRE(eventually([&] { return load_a.issued() > 1000; }));
  // A cloned VM image, a restored volume snapshot: the same files, elsewhere.
  const auto copy = parent.path() / "copied-state";
  copy_directory(a_state.path(), copy);

  Daemon b(cluster_config(zk.hosts(), "recycle", copy, slow_heartbeat).dump());
  IdLoad load_b(b.port(), 200);  // from the moment it listens
  const auto worker_b = wait_ready(b);
  // Longer than A's heartbeat interval: A would have noticed a theft by now.
  const auto until = std::chrono::steady_clock::now() + 6s;
  REQUIRE(eventually([&] { return std::chrono::steady_clock::now() > until; }, 10s));
  load_a.stop();
  load_b.stop();
  FIGURES("copied state dir: A " << load_a.ids().size() << " IDs (worker " << worker_a << "), B "
                                 << load_b.ids().size() << " IDs (worker " << worker_b
                                 << "), refusals A " << describe(load_a.refusals()) << "B "
                                 << describe(load_b.refusals()) << "; duplicates "
                                 << duplicates(load_a.ids(), load_b.ids()));
  CHECK(worker_b != worker_a);
  CHECK(duplicates(load_a.ids(), load_b.ids()) == 0);
  // A never lost its worker ID to the copy. (A slow disk under a loaded test
  // run may cost it a time_not_reserved or two; that is not the copy's doing.)
  CHECK(metric(a, "snowflake_workers_lost_total") == 0);
  CHECK_FALSE(load_a.refusals().contains("not_ready"));
  CHECK_THAT(b.process().stderr_text(), Catch::Contains("proves nothing"));
}

TEST_CASE("takeover needs this boot: a state file from another boot claims another worker ID",
          "[safety][takeover]") {
  ZooKeeperServer zk;
  TempDir state;
  const json patch = kTwoWorkers;
  std::uint32_t worker = 0;
  {
    Daemon a(cluster_config(zk.hosts(), "recycle", state.path(), patch).dump());
    worker = wait_ready(a);
    a.process().send_signal(SIGKILL);
    a.process().wait_for_exit(10s);
  }
  SECTION("the same boot: the worker ID is taken back") {
    Daemon again(cluster_config(zk.hosts(), "recycle", state.path(), patch).dump());
    CHECK(wait_ready(again) == worker);
    CHECK_THAT(again.process().stderr_text(), Catch::Contains("took worker ID"));
  }
  SECTION("as if restored on another machine: another worker ID") {
    auto record = json::parse(std::ifstream(state.path() / "worker.json"));
    record["boot_id"] = "00000000-0000-0000-0000-000000000000";
    std::ofstream(state.path() / "worker.json") << record.dump();
    Daemon again(cluster_config(zk.hosts(), "recycle", state.path(), patch).dump());
    CHECK(wait_ready(again) != worker);
  }
}

TEST_CASE(
    "two sequential daemons with one identity: the second waits for the first, then starts "
    "above it",
    "[safety][sequential]") {
  ZooKeeperServer zk;
  TempDir a_state, b_state;
  const json same_name = {{"coordinator", {{"advertise", "clone:9000"}}}};
  Daemon a(cluster_config(zk.hosts(), "sequential", a_state.path(), same_name).dump());
  const auto worker = wait_ready(a);
  IdLoad load_a(a.port(), 200);
  Daemon b(cluster_config(zk.hosts(), "sequential", b_state.path(), same_name).dump());
  const std::string holder = "pid " + std::to_string(a.process().pid());
  REQUIRE(b.process().wait_for_stderr(holder, 10s));
  CHECK_THAT(b.process().stderr_text(),
             Catch::Contains("clone:9000") && Catch::Contains("in use by"));
  for (int i = 0; i < 5; ++i) {
    CHECK(error_of(http_get(b.port(), "/id/x")) == "not_ready");
    std::this_thread::sleep_for(100ms);
  }
  IdLoad load_b(b.port(), 200);
  REQUIRE(eventually([&] { return load_a.issued() > 50'000; }));
  a.process().send_signal(SIGKILL);
  a.process().wait_for_exit(10s);
  const auto killed = std::chrono::steady_clock::now();
  load_a.stop();

  CHECK(wait_ready(b, 30s) == worker);
  const auto b_ready_after = std::chrono::steady_clock::now() - killed;
  REQUIRE(eventually([&] { return load_b.issued() > 50'000; }));
  load_b.stop();
  FIGURES("one sequential identity: A " << load_a.ids().size() << " IDs; B " << load_b.ids().size()
                                        << " IDs, ready " << seconds(b_ready_after)
                                        << " s after A was killed, refusals "
                                        << describe(load_b.refusals()) << "; duplicates "
                                        << duplicates(load_a.ids(), load_b.ids()));
  CHECK(duplicates(load_a.ids(), load_b.ids()) == 0);
  // Above everything A could have issued, not just what it did.
  CHECK(*std::min_element(load_b.ids().begin(), load_b.ids().end()) >
        *std::max_element(load_a.ids().begin(), load_a.ids().end()));
  CHECK(load_b.refusals().contains("not_ready"));
}

TEST_CASE("one worker-ID space per root: a recycle daemon on a sequential root exits 3 naming both",
          "[safety][root]") {
  ZooKeeperServer zk;
  TempDir s1, s2;
  Daemon sequential(cluster_config(zk.hosts(), "sequential", s1.path(),
                                   {{"coordinator", {{"advertise", "host:1"}}}})
                        .dump());
  wait_ready(sequential);
  Daemon recycle(cluster_config(zk.hosts(), "recycle", s2.path()).dump());
  CHECK(exit_of(recycle).code == 3);
  CHECK_THAT(recycle.process().stderr_text(), Catch::Contains("\"sequential\" strategy") &&
                                                  Catch::Contains("\"recycle\"") &&
                                                  Catch::Contains("another zookeeper.root"));
  CHECK(ready(sequential));
}

TEST_CASE("one process per state directory: a second daemon on it exits 1 naming the holder",
          "[safety][state_dir]") {
  TempDir state;
  const json static_config = {
      {"coordinator", {{"type", "static"}, {"state_dir", state.path().string()}}}};
  Daemon first(static_config.dump());
  TempDir second_dir;
  const auto config = second_dir.write("c.json", static_config.dump());
  const auto second =
      run_process({SNOWFLAKED_PATH, "--config", config.string(), "--listen", "127.0.0.1:0"});
  CHECK(second.status.code == 1);
  CHECK_THAT(second.err, Catch::Contains("is in use by another snowflaked (pid " +
                                         std::to_string(first.process().pid()) + ")"));
  CHECK(http_get(first.port(), "/id/x")->status == 200);

  SECTION("coordinated modes too") {
    ZooKeeperServer zk;
    const auto recycle =
        second_dir.write("r.json", cluster_config(zk.hosts(), "recycle", state.path()).dump());
    const auto r =
        run_process({SNOWFLAKED_PATH, "--config", recycle.string(), "--listen", "127.0.0.1:0"});
    CHECK(r.status.code == 1);
    CHECK_THAT(r.err, Catch::Contains("pid " + std::to_string(first.process().pid())));
  }
}

TEST_CASE("static mode keeps a floor: kill -9, clock 3 s back, restart: nothing repeats",
          "[safety][static]") {
  TempDir state, clocks;
  WallClockOffset clock(clocks.path() / "offset");
  const json static_config = {
      {"coordinator", {{"type", "static"}, {"state_dir", state.path().string()}}}};
  std::vector<std::uint64_t> before;
  {
    Daemon d(static_config.dump(), "127.0.0.1:0", clock.env());
    IdLoad load(d.port(), 500);
    REQUIRE(eventually([&] { return load.issued() > 0; }));
    std::this_thread::sleep_for(2s);  // two seconds of load, as the report had it
    d.process().send_signal(SIGKILL);
    d.process().wait_for_exit(10s);
    load.stop();
    before = load.ids();
  }
  clock.set("-3s");
  Daemon d(static_config.dump(), "127.0.0.1:0", clock.env());
  IdLoad load(d.port(), 500);
  std::this_thread::sleep_for(2500ms);  // two and a half seconds of load, as the report had it
  const std::size_t while_behind = load.issued();
  clock.set("+0");  // the clock is right again: it serves above the floor
  const auto fixed = std::chrono::steady_clock::now();
  REQUIRE(eventually([&] { return load.issued() > while_behind; }));
  const auto serving_after = std::chrono::steady_clock::now() - fixed;
  REQUIRE(eventually([&] { return load.issued() > while_behind + 10'000; }));
  load.stop();
  FIGURES("static floor: before " << before.size() << " IDs; after " << load.ids().size() << " ("
                                  << while_behind << " while the clock was behind), refusals "
                                  << describe(load.refusals()) << ", serving "
                                  << seconds(serving_after)
                                  << " s after the clock was right; duplicates "
                                  << duplicates(before, load.ids()));
  // Enough IDs that the floor had to cover many milliseconds; under TSan on
  // busy cores two seconds bring tens of thousands, not the hundreds of
  // thousands of an idle machine.
  CHECK(before.size() > 10'000);
  CHECK(duplicates(before, load.ids()) == 0);
  CHECK(load.refusals().contains("clock_moved_backwards"));
  CHECK(*std::min_element(load.ids().begin(), load.ids().end()) >
        *std::max_element(before.begin(), before.end()));
}

TEST_CASE("a pool of 4, all 4 owners killed: 4 fresh daemons reap it and all become ready",
          "[safety][liveness]") {
  ZooKeeperServer zk;
  const json four = {{"layout", {{"worker_bits", 2}, {"sequence_bits", 20}}}};
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Daemon>> daemons;
  start_recycle_daemons(zk, 4, four, dirs, daemons);
  for (auto& d : daemons) wait_ready(*d);
  for (auto& d : daemons) d->process().send_signal(SIGKILL);
  for (auto& d : daemons) d->process().wait_for_exit(10s);
  const auto killed = std::chrono::steady_clock::now();

  std::vector<std::unique_ptr<Daemon>> fresh;
  start_recycle_daemons(zk, 4, four, dirs, fresh);
  std::set<std::uint32_t> workers;
  for (auto& d : fresh) workers.insert(wait_ready(*d, 30s));
  const auto took = std::chrono::steady_clock::now() - killed;
  FIGURES("pool of 4: all 4 fresh daemons ready " << seconds(took) << " s after the kill, workers "
                                                  << workers.size());
  CHECK(workers.size() == 4);
  // reclaim_after (2.5 s) and the dead sessions' end (2 s) run side by side;
  // then a few heartbeat intervals (300 ms) of reaping and claiming.
  CHECK(took < 2500ms + 10 * 300ms);
}

TEST_CASE(
    "one reaper: frozen with a dead owner's ID stale, another daemon takes the role and reclaims "
    "it",
    "[safety][liveness][reaper]") {
  ZooKeeperServer zk;
  const json four = {{"layout", {{"worker_bits", 2}, {"sequence_bits", 20}}}};
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Daemon>> daemons;
  start_recycle_daemons(zk, 3, four, dirs, daemons);
  for (auto& d : daemons) wait_ready(*d);
  const auto reapers = [&](const std::vector<Daemon*>& of) {
    std::int64_t sum = 0;
    for (Daemon* d : of) sum += metric(*d, "snowflake_reaper");
    return sum;
  };
  std::vector<Daemon*> all;
  for (auto& d : daemons) all.push_back(d.get());
  // After a heartbeat each, exactly one holds the role.
  REQUIRE(eventually([&] { return reapers(all) == 1; }));
  for (int look = 0; look < 5; ++look) CHECK(reapers(all) == 1);
  const auto holder = std::find_if(all.begin(), all.end(),
                                   [&](Daemon* d) { return metric(*d, "snowflake_reaper") == 1; });
  Daemon& reaper = **holder;
  Daemon* victim = nullptr;
  Daemon* survivor = nullptr;
  for (Daemon* d : all) {
    if (d == &reaper) continue;
    (victim ? survivor : victim) = d;
  }
  // One owner dies; the reaper freezes before its ID is stale (2.5 s).
  victim->process().send_signal(SIGKILL);
  victim->process().wait_for_exit(10s);
  const auto killed = std::chrono::steady_clock::now();
  reaper.process().send_signal(SIGSTOP);
  // The frozen holder's session ends (2 s); the survivor, woken by its
  // watch, holds the role and returns the dead owner's ID (and, once stale
  // too, the frozen holder's own).
  const bool reclaimed =
      eventually([&] { return metric(*survivor, "snowflake_workers_reclaimed_total") >= 1; }, 20s);
  INFO("the survivor's log:\n" << survivor->process().stderr_text());
  REQUIRE(reclaimed);
  const auto took = std::chrono::steady_clock::now() - killed;
  CHECK(metric(*survivor, "snowflake_reaper") == 1);
  reaper.process().send_signal(SIGCONT);
  FIGURES("a dead owner's ID reclaimed by the next reaper "
          << seconds(took) << " s after the kill, its holder frozen");
  // reclaim_after (2.5 s), then the frozen holder's session (2 s) ends
  // after it, then a heartbeat interval (300 ms) and slack for a busy machine.
  CHECK(took < 2500ms + 2000ms + 300ms + 3s);
  // Thawed, the old holder finds its session ended: it stands again, behind.
  REQUIRE(eventually([&] { return metric(reaper, "snowflake_zookeeper_sessions_total") == 2; }));
  REQUIRE(eventually([&] { return reapers({&reaper, survivor}) == 1; }));
  CHECK(metric(reaper, "snowflake_reaper") == 0);
  CHECK(metric(reaper, "snowflake_workers_reclaimed_total") == 0);
}

TEST_CASE("a clock stepped back 120 s during a sequence wait: 503 at once, /health still answers",
          "[safety][clock]") {
  TempDir clocks;
  WallClockOffset clock(clocks.path() / "offset");
  // 1 s units of 4 IDs: asking for 40 waits through 10 units.
  const json slow = {
      {"layout",
       {{"time_bits", 51}, {"worker_bits", 10}, {"sequence_bits", 2}, {"time_unit_ms", 1000}}},
      {"http", {{"io_threads", 1}, {"max_batch", 100}}}};
  Daemon d(slow.dump(), "127.0.0.1:0", clock.env());
  std::optional<HttpReply> reply;
  std::thread waiting([&] {
    HttpConnection c(d.port(), "127.0.0.1", 30s);
    reply = c.request("/id/x?count=40");
  });
  // The fault goes in while the request waits (it takes ~10 s): its one
  // io thread is inside the wait, so nothing else can be asked meanwhile.
  std::this_thread::sleep_for(1500ms);
  clock.set("-120s");
  const auto stepped = std::chrono::steady_clock::now();
  waiting.join();
  const auto answered_after = std::chrono::steady_clock::now() - stepped;
  REQUIRE(reply);
  FIGURES("clock step back 120 s in a wait: " << reply->status << " " << error_of(reply) << " "
                                              << seconds(answered_after) << " s after the step");
  CHECK(reply->status == 503);
  CHECK(error_of(reply) == "clock_moved_backwards");
  CHECK(answered_after < 1s);
  HttpConnection health(d.port(), "127.0.0.1", 2s);
  CHECK(health.request("/health")->status == 200);
}

TEST_CASE("a claim whose answer was lost is recovered, not misjudged as clock skew",
          "[safety][lost_answer]") {
  ZooKeeperServer zk;
  {  // a pool exists already: the daemon's first write is its claim
    auto s = connect_session(zk.hosts());
    REQUIRE(coord::RecyclePool(kE2eRoot, 1023).ensure(*s, 5s));
  }
  FaultProxy proxy(zk.port());
  // Lost, and the connection down for a moment: it cannot be read back at once.
  proxy.lose_next_reply(FaultProxy::kMulti, 1s);
  TempDir state;
  Daemon d(cluster_config(proxy.hosts(), "recycle", state.path(),
                          {{"coordinator", {{"max_skew_ms", 50}}}})
               .dump());
  const auto worker = wait_ready(d);
  FIGURES("claim reply lost: replies lost " << proxy.replies_lost() << ", ready as worker "
                                            << worker);
  CHECK(proxy.replies_lost() == 1);
  CHECK(d.process().running());
  auto s = connect_session(zk.hosts());
  CHECK(s->exists(kE2eRoot + "/pool/inuse/" + std::to_string(worker)).value());
  CHECK(s->children(kE2eRoot + "/pool/inuse").value().size() == 1);  // one claim, not two
  // It issues (a state file slow to sync under load may hold the first IDs
  // back for a moment with time_not_reserved: documented, and not this test's).
  CHECK(eventually([&] { return fetch_ids(d, 10).size() == 10; }, 10s));
}

TEST_CASE("a takeover whose answer was lost is recognised as ours", "[safety][lost_answer]") {
  ZooKeeperServer zk;
  FaultProxy proxy(zk.port());
  TempDir state;
  std::uint32_t worker = 0;
  {
    Daemon a(cluster_config(zk.hosts(), "recycle", state.path()).dump());
    worker = wait_ready(a);
    a.process().send_signal(SIGKILL);
    a.process().wait_for_exit(10s);
  }
  // Once the killed run's session has ended, the restart's first write is the takeover.
  auto s = connect_session(zk.hosts());
  const std::string alive = kE2eRoot + "/alive/" + std::to_string(worker);
  REQUIRE(eventually([&] { return !s->exists(alive).value().has_value(); }));
  proxy.lose_next_reply(FaultProxy::kMulti, 1s);
  Daemon again(cluster_config(proxy.hosts(), "recycle", state.path()).dump());
  const auto again_worker = wait_ready(again);
  FIGURES("takeover reply lost: replies lost " << proxy.replies_lost() << ", worker " << worker
                                               << " before, " << again_worker << " after");
  CHECK(again_worker == worker);
  CHECK(proxy.replies_lost() == 1);
  CHECK(s->children(kE2eRoot + "/pool/inuse").value().size() == 1);
}

TEST_CASE(
    "a floor no higher than what could be issued: an hour's clock step, then kill -9, the "
    "restart is ready again within max_boot_wait with its worker ID",
    "[safety][takeover][clock]") {
  for (const std::string strategy : {"sequential", "recycle"}) {
    INFO(strategy);
    ZooKeeperServer zk;
    TempDir state;
    TempDir clocks;
    WallClockOffset clock(clocks.path() / "offset");
    json patch = kTwoWorkers;
    patch["coordinator"] = {{"advertise", "probe:1"}};
    const std::string config = cluster_config(zk.hosts(), strategy, state.path(), patch).dump();
    std::uint32_t worker = 0;
    std::vector<std::uint64_t> before;
    {
      Daemon a(config, "127.0.0.1:0", clock.env());
      worker = wait_ready(a);
      before = fetch_ids(a, 100);
      const auto heartbeats = metric(a, "snowflake_heartbeats_total");
      // A bad RTC read: an hour ahead. Heartbeats go on (ZooKeeper is fine);
      // the daemon refuses with clock_skew and issues nothing.
      clock.set("+3600s");
      REQUIRE(
          eventually([&] { return error_of(http_get(a.port(), "/id/x")) == "clock_skew"; }, 10s));
      REQUIRE(eventually([&] { return metric(a, "snowflake_heartbeats_total") >= heartbeats + 3; },
                         10s));
      a.process().send_signal(SIGKILL);
      a.process().wait_for_exit(10s);
    }
    clock.set("+0");
    const auto restarted = std::chrono::steady_clock::now();
    Daemon b(config, "127.0.0.1:0", clock.env());
    // max_boot_wait (5 s) + ZooKeeper ending the dead run's session (2 s) + heartbeats.
    const auto again = wait_ready(b, 9s);
    const auto took = std::chrono::steady_clock::now() - restarted;
    FIGURES(strategy << ": ready again " << seconds(took) << " s after the restart, worker ID "
                     << again);
    CHECK(again == worker);
    const auto after = fetch_ids(b, 100);
    CHECK(duplicates(before, after) == 0);
    CHECK(*std::min_element(after.begin(), after.end()) >
          *std::max_element(before.begin(), before.end()));
  }
}

TEST_CASE(
    "a floor no higher than what could be issued: a heartbeat with the clock an hour ahead "
    "records no more than ZooKeeper's time + max_skew, so whoever takes the worker ID "
    "without our state waits no longer than max_boot_wait",
    "[safety][clock]") {
  constexpr std::int64_t kMaxSkewMs = 2000;  // the default
  for (const std::string strategy : {"sequential", "recycle"}) {
    INFO(strategy);
    ZooKeeperServer zk;
    TempDir a_state, keeper_state, b_state, clocks;
    WallClockOffset clock(clocks.path() / "offset");
    json patch = kTwoWorkers;
    patch["coordinator"] = {{"advertise", "probe:1"}};
    // Recycle: a second daemon holds the other worker ID and reaps the dead
    // one's, so the newcomer can only take that one.
    std::optional<Daemon> keeper;
    if (strategy == "recycle") {
      keeper.emplace(cluster_config(zk.hosts(), strategy, keeper_state.path(), kTwoWorkers).dump());
      wait_ready(*keeper);
    }
    std::uint32_t worker = 0;
    std::vector<std::uint64_t> before;
    {
      Daemon a(cluster_config(zk.hosts(), strategy, a_state.path(), patch).dump(), "127.0.0.1:0",
               clock.env());
      worker = wait_ready(a);
      before = fetch_ids(a, 100);
      const auto heartbeats = metric(a, "snowflake_heartbeats_total");
      clock.set("+3600s");  // a bad RTC read
      REQUIRE(
          eventually([&] { return error_of(http_get(a.port(), "/id/x")) == "clock_skew"; }, 10s));
      REQUIRE(eventually([&] { return metric(a, "snowflake_heartbeats_total") >= heartbeats + 3; },
                         10s));
      // What the node says now, against ZooKeeper's clock (this machine's, unstepped).
      auto s = connect_session(zk.hosts());
      std::int64_t written_ts = 0;
      if (strategy == "recycle") {
        written_ts = coord::decode_inuse(
                         s->get(kE2eRoot + "/pool/inuse/" + std::to_string(worker)).value().data)
                         ->ts;
      } else {
        const auto names = s->children(kE2eRoot + "/forever").value();
        REQUIRE(names.size() == 1);
        written_ts =
            coord::decode_sequential(s->get(kE2eRoot + "/forever/" + names[0]).value().data)->ts;
      }
      FIGURES(strategy << ": the skewed heartbeat wrote ts " << written_ts - wall_ms_now()
                       << " ms from ZooKeeper's time");
      CHECK(written_ts <= wall_ms_now() + kMaxSkewMs + 500);  // + the round trip
      a.process().send_signal(SIGKILL);
      a.process().wait_for_exit(10s);
    }
    clock.set("+0");
    if (keeper) {
      // The keeper's reaper returns the dead daemon's worker ID to the pool.
      REQUIRE(eventually([&] { return metric(*keeper, "snowflake_workers_reclaimed_total") >= 1; },
                         15s));
    }
    // Another machine (no state dir: no proof that the first is dead).
    const auto started = std::chrono::steady_clock::now();
    Daemon b(cluster_config(zk.hosts(), strategy, b_state.path(), patch).dump());
    const auto again = wait_ready(b, 12s);
    FIGURES(strategy << ": the newcomer was ready "
                     << seconds(std::chrono::steady_clock::now() - started)
                     << " s after its start, worker ID " << again);
    CHECK(again == worker);
    const auto after = fetch_ids(b, 100);
    CHECK(*std::min_element(after.begin(), after.end()) >
          *std::max_element(before.begin(), before.end()));
  }
}
