// Many daemons' coordination in one process, for a simulation of fleets in
// the thousands (tests/bench/scale_sim.py): the real Coordinator of each
// (claim in the claimers' line, heartbeat, the elected reaper, release at
// stop) against a real ZooKeeper, without the HTTP side, whose cost does not
// reach ZooKeeper. Processes of a few threads per daemon, not of a whole
// daemon each: thousands fit on one machine.
//
//   coordinator_fleet CONFIG_FILE STATE_ROOT FIRST_INDEX COUNT [TAG ...]
//
// Coordinator i (FIRST_INDEX <= i < FIRST_INDEX + COUNT) takes CONFIG_FILE's
// settings, the state directory STATE_ROOT/i and the name "sim-i:9000".
// With TAGs (sequences that restart each period, made by `seq create`),
// each also runs the daemon's sequence supplier over its session, asked
// once for each TAG as a request would: from then on it makes each
// period's node and takes its first range, the next period's a while
// before its boundary (the day's turn). All are started at once; once
// each may issue (its worker ID claimed, its lease running, each TAG's
// current period holding a range) it prints
//   ready SECONDS REQUESTS
// (the seconds since the start, the ZooKeeper requests this process sent),
// then answers one command per line of standard input:
//   stats  ->  stats REQUESTS HEARTBEATS READY REAPERS RECLAIMED RETRIES MAX_RETRIES MAX_BEAT
//              (summed over its coordinators; READY: how many may issue now;
//              RETRIES: heartbeat writes a move elsewhere refused, since the
//              last `mark`, MAX_RETRIES the most of one coordinator, MAX_BEAT
//              of one heartbeat; -1 for a build whose coordinator does not
//              count them)
//   mark   ->  marked (the retries counted from now)
//   turn MS -> turn HOLDING: how many hold a range of the period that
//              begins at MS (Unix ms) for every TAG
//   pool   ->  pool INUSE NOTUSE MOVES, read from ZooKeeper on a session of
//              its own (the pool's inuse and notuse nodes, its move count;
//              -1 each when they could not be read)
//   stop   ->  every coordinator shut down at once, 64 at a time (its worker
//              ID given back), then stopped SECONDS, and the program exits
// A coordinator that fails for good prints "fatal INDEX WHY" and the program
// exits 1.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/worker_slot.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/sequences/periodic.hpp"
#include "snowflake/sequences/registry.hpp"
#include "snowflake/workers/coordinator.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace {

using namespace snowflake;
using Steady = std::chrono::steady_clock;

// One daemon's coordination: what daemon.cpp gives its Coordinator.
struct Member {
  CoordinationGauges gauges;
  WorkerSlot slot;
  Lease lease;
  std::unique_ptr<coord::Coordinator> coordinator;
  // With TAGs: its sequences, as daemon.cpp's start_sequences makes them.
  std::unique_ptr<SequenceRegistry> sequences;
  std::unique_ptr<coord::SequenceSupplier> supplier;

  bool may_issue() const { return slot.current() != nullptr && lease.may_issue(); }

  // Whether every tag holds a range of the period that begins at
  // `begins_ms`; the current period's (INT64_MIN): of the clock's.
  bool holds(const std::vector<std::string>& tags, std::int64_t begins_ms) const {
    const std::int64_t now = SystemClock::instance().wall_ms();
    for (const auto& tag : tags) {
      const SequenceEntry* entry = sequences->find(tag);
      const PeriodicSequence* periodic = entry ? entry->periodic.load() : nullptr;
      if (!periodic) return false;
      const auto held = periodic->hold();
      bool found = false;
      for (const PeriodSlot* s : periodic->live(held)) {
        const bool that = begins_ms == INT64_MIN
                              ? s->period.begins_ms <= now && now < s->period.next_begins_ms
                              : s->period.begins_ms == begins_ms;
        found = found || (that && s->entry.gauges.fetches.load() > 0);
      }
      if (!found) return false;
    }
    return true;
  }

  // A request for each tag, as the router's first ask: wanted from now on.
  // False until the supplier has listed them all.
  bool asked = false;
  bool ask_for(const std::vector<std::string>& tags) {
    for (const auto& tag : tags) {
      if (!sequences->find(tag)) return false;
    }
    for (const auto& tag : tags) sequences->find(tag)->wanted.store(true);
    sequences->request_refill();
    return asked = true;
  }
};

// The config's ZooKeeper, as program_config.cpp's zookeeper_settings
// (which is the daemon's executable's, not the core's).
coord::ZkSettings zk_settings(const Config& c) {
  return {.hosts = c.zookeeper.hosts,
          .session_timeout = c.zookeeper.session_timeout,
          .connect_timeout = c.zookeeper.connect_timeout};
}

// As daemon.cpp's start_sequences, over the member's coordinator session.
coord::SequenceSupplierOptions supplier_options(const Config& c, Member& m, int index) {
  const auto& q = c.sequences;
  coord::SequenceSupplierOptions o{
      .zookeeper = zk_settings(c),
      .root = c.zookeeper.root,
      .run = "sim-run-" + std::to_string(index) + "-" + std::to_string(::getpid()),
      .owner = "sim-" + std::to_string(index) + ":9000",
      .sizing = {q.segment_duration, q.max_step, static_cast<double>(q.refill_at_percent) / 100.0},
      .max_skew = c.coordinator.max_skew,
      .restore_grace = c.coordinator.restore_grace};
  o.history = &m.coordinator->history();
  o.shared_session = [coordinator = m.coordinator.get()] { return coordinator->session(); };
  o.reclaim_after = c.coordinator.reclaim_after;
  o.safety_margin = c.coordinator.safety_margin;
  return o;
}

// As daemon.cpp's coordinator_options, with this member's name and state.
coord::CoordinatorOptions options_for(const Config& c, const std::filesystem::path& state,
                                      int index) {
  return {.strategy = c.coordinator.type,
          .zookeeper = zk_settings(c),
          .root = c.zookeeper.root,
          .settings = c.coordinator,
          .generator = c.generator,
          .advertise = "sim-" + std::to_string(index) + ":9000",
          .state_dir = state.string(),
          .opaque_key = {},
          .forms = coord::form_policy_of(c.forms)};
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "coordinator_fleet: " << why
            << "\nusage: coordinator_fleet CONFIG_FILE STATE_ROOT FIRST_INDEX COUNT [TAG ...]\n";
  std::exit(2);
}

double seconds_since(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

// A coordinator's refused heartbeat writes; -1 where the build's gauges do
// not count them (a baseline revision built with this file: scale_sim.py).
template <class Gauges>
long long heartbeat_retries(const Gauges& g) {
  if constexpr (requires { g.heartbeat_retries.load(); }) {
    return static_cast<long long>(g.heartbeat_retries.load());
  } else {
    return -1;
  }
}

// The most one heartbeat had since `mark` (which resets it), or -1 likewise.
template <class Gauges>
long long heartbeat_retries_most(Gauges& g, bool reset) {
  if constexpr (requires { g.heartbeat_retries_most.load(); }) {
    return static_cast<long long>(reset ? g.heartbeat_retries_most.exchange(0)
                                        : g.heartbeat_retries_most.load());
  } else {
    return -1;
  }
}

// Shuts every member down at once: a fleet stopping together (a node
// drained, a cluster scaled to zero), `threads` stops in flight at a time.
void stop_all(std::vector<std::unique_ptr<Member>>& fleet, int threads) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> stoppers;
  for (int t = 0; t < threads; ++t) {
    stoppers.emplace_back([&] {
      for (std::size_t i = next.fetch_add(1); i < fleet.size(); i = next.fetch_add(1)) {
        if (fleet[i]->supplier) fleet[i]->supplier->stop();  // as a daemon: sequences first
        fleet[i]->coordinator->shutdown();
      }
    });
  }
  for (auto& t : stoppers) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) usage("four arguments at least");
  const std::vector<std::string> tags(argv + 5, argv + argc);
  // Warnings and errors only: thousands of coordinators say "acquired".
  spdlog::set_level(spdlog::level::warn);
  const auto config = load_config_file(argv[1], SystemClock::instance().wall_ms());
  if (!config) usage(config.error().describe(argv[1]));
  const std::filesystem::path state_root = argv[2];
  const int first = std::atoi(argv[3]);
  const int count = std::atoi(argv[4]);
  if (count < 1) usage("COUNT must be at least 1");
  const auto layout = IdLayout::create(config.value().layout, SystemClock::instance().wall_ms());
  if (!layout) usage("the config's layout cannot issue now");

  std::atomic<bool> failed{false};
  std::vector<std::unique_ptr<Member>> fleet;
  const auto started = Steady::now();
  for (int i = first; i < first + count; ++i) {
    auto m = std::make_unique<Member>();
    const auto state = state_root / std::to_string(i);
    std::filesystem::create_directories(state);
    auto options = options_for(config.value(), state, i);
    if (!tags.empty()) {
      // As daemon.cpp: the heartbeats tell the periods what ZooKeeper's
      // clock reads (no probe of the supplier's own while they come).
      m->sequences = std::make_unique<SequenceRegistry>(config.value().sequences.max_tags);
      m->sequences->zookeeper_clock.set_max_skew(config.value().coordinator.max_skew);
      options.zookeeper_clock = &m->sequences->zookeeper_clock;
    }
    m->coordinator =
        std::make_unique<coord::Coordinator>(std::move(options), layout.value(), m->slot, m->lease,
                                             m->gauges, [&failed, i](const std::string& why, bool) {
                                               std::printf("fatal %d %s\n", i, why.c_str());
                                               std::fflush(stdout);
                                               failed = true;
                                             });
    if (auto s = m->coordinator->start(); !s) {
      std::printf("fatal %d %s\n", i, s.error().c_str());
      return 1;
    }
    if (!tags.empty()) {
      m->supplier = std::make_unique<coord::SequenceSupplier>(
          supplier_options(config.value(), *m, i), *m->sequences);
      m->supplier->start();
    }
    fleet.push_back(std::move(m));
  }
  // Ready: may issue, and each tag asked for and holding its current
  // period's range. The first asks are spread over a minute from the
  // first: a fleet's first requests come as its daemons join the load
  // balancer, not in one instant (and a supplier's holder node is written
  // again a minute after its last write: asked at one instant, the whole
  // fleet would write it at one instant each minute). The day's turn is
  // what is measured.
  std::optional<Steady::time_point> first_ask;
  int asked = 0;
  const auto ready_count = [&] {
    int ready = 0;
    for (const auto& m : fleet) {
      bool ok = m->may_issue();
      if (ok && !tags.empty() && !m->holds(tags, INT64_MIN)) {
        if (!first_ask) first_ask = Steady::now();
        const double share = std::min(1.0, seconds_since(*first_ask) / 60.0);
        if (!m->asked && asked < 1 + share * count && m->ask_for(tags)) ++asked;
        ok = false;
      }
      ready += ok ? 1 : 0;
    }
    return ready;
  };
  // Polled, not waited on: the coordinators publish only what the HTTP side
  // reads (the slot and the lease).
  auto next_progress = started + std::chrono::seconds(5);
  for (int ready = 0; (ready = ready_count()) < count;) {
    if (failed) return 1;
    if (Steady::now() >= next_progress) {  // for a person watching: "waiting READY REQUESTS"
      std::printf("waiting %d %llu\n", ready,
                  static_cast<unsigned long long>(zookeeper_requests_sent.load()));
      std::fflush(stdout);
      next_progress += std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("ready %.3f %llu\n", seconds_since(started),
              static_cast<unsigned long long>(zookeeper_requests_sent.load()));
  std::fflush(stdout);

  std::vector<long long> retries_marked(fleet.size(), 0);
  const coord::ZkSettings zk_options = zk_settings(config.value());
  std::shared_ptr<coord::ZkSession> reader;  // for `pool`, made at its first use
  const std::string pool_dir = config.value().zookeeper.root + "/pool";
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "stats") {
      unsigned long long beats = 0;
      unsigned long long reclaimed = 0;
      int reapers = 0;
      long long retries = 0;
      long long most = 0;
      long long most_beat = 0;
      for (std::size_t i = 0; i < fleet.size(); ++i) {
        const Member& m = *fleet[i];
        beats += m.gauges.heartbeats.load();
        reclaimed += m.gauges.workers_reclaimed.load();
        reapers += m.gauges.reaper.load() ? 1 : 0;
        const long long r = heartbeat_retries(m.gauges);
        const long long b = heartbeat_retries_most(fleet[i]->gauges, false);
        if (r < 0 || b < 0) {
          retries = most = most_beat = -1;
        } else if (retries >= 0) {
          retries += r - retries_marked[i];
          most = std::max(most, r - retries_marked[i]);
          most_beat = std::max(most_beat, b);
        }
      }
      std::printf("stats %llu %llu %d %d %llu %lld %lld %lld\n",
                  static_cast<unsigned long long>(zookeeper_requests_sent.load()), beats,
                  ready_count(), reapers, reclaimed, retries, most, most_beat);
    } else if (line == "mark") {
      for (std::size_t i = 0; i < fleet.size(); ++i) {
        retries_marked[i] = heartbeat_retries(fleet[i]->gauges);
        heartbeat_retries_most(fleet[i]->gauges, true);
      }
      std::printf("marked\n");
    } else if (line.starts_with("turn ")) {
      const std::int64_t begins = std::atoll(line.c_str() + 5);
      int holding = 0;
      for (const auto& m : fleet) holding += !tags.empty() && m->holds(tags, begins) ? 1 : 0;
      std::printf("turn %d\n", holding);
    } else if (line == "pool") {
      if (!reader || reader->gone()) {
        auto made = coord::ZkSession::connect(zk_options);
        if (!made) {  // not read this time: asked again
          std::printf("pool -1 -1 -1\n");
          std::fflush(stdout);
          continue;
        }
        reader = std::move(made).value();
      }
      const auto inuse = reader->children(pool_dir + "/inuse");
      const auto notuse = reader->children(pool_dir + "/notuse");
      const auto moves = reader->exists(pool_dir + "/inuse");
      if (inuse && notuse && moves && moves.value()) {
        std::printf("pool %zu %zu %d\n", inuse.value().size(), notuse.value().size(),
                    moves.value()->version);
      } else {
        std::printf("pool -1 -1 -1\n");
      }
    } else if (line == "stop") {
      const auto stopping = Steady::now();
      stop_all(fleet, 64);
      std::printf("stopped %.3f\n", seconds_since(stopping));
      std::fflush(stdout);
      return failed ? 1 : 0;
    }
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}
