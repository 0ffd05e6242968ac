// Many daemons' coordination in one process, for a simulation of fleets in
// the thousands (tests/bench/scale_sim.py): the real Coordinator of each
// (claim in the claimers' line, heartbeat, the elected reaper, release at
// stop) against a real ZooKeeper, without the HTTP side, whose cost does not
// reach ZooKeeper. Processes of a few threads per daemon, not of a whole
// daemon each: thousands fit on one machine.
//
//   coordinator_fleet CONFIG_FILE STATE_ROOT FIRST_INDEX COUNT
//
// Coordinator i (FIRST_INDEX <= i < FIRST_INDEX + COUNT) takes CONFIG_FILE's
// settings, the state directory STATE_ROOT/i and the name "sim-i:9000". All
// are started at once; once each may issue (its worker ID claimed, its
// lease running) it prints
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
//   pool   ->  pool INUSE NOTUSE MOVES, read from ZooKeeper on a session of
//              its own (the pool's inuse and notuse nodes, its move count;
//              -1 each when they could not be read)
//   stop   ->  every coordinator shut down at once, 64 at a time (its worker
//              ID given back), then stopped SECONDS, and the program exits
// A coordinator that fails for good prints "fatal INDEX WHY" and the program
// exits 1.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/worker_slot.hpp"
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

  bool may_issue() const { return slot.current() != nullptr && lease.may_issue(); }
};

// As daemon.cpp's coordinator_options, with this member's name and state.
coord::CoordinatorOptions options_for(const Config& c, const std::filesystem::path& state,
                                      int index) {
  return {.strategy = c.coordinator.type,
          .zookeeper = {.hosts = c.zookeeper.hosts,
                        .session_timeout = c.zookeeper.session_timeout,
                        .connect_timeout = c.zookeeper.connect_timeout},
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
            << "\nusage: coordinator_fleet CONFIG_FILE STATE_ROOT FIRST_INDEX COUNT\n";
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
        fleet[i]->coordinator->shutdown();
      }
    });
  }
  for (auto& t : stoppers) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) usage("four arguments");
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
    m->coordinator = std::make_unique<coord::Coordinator>(
        options_for(config.value(), state, i), layout.value(), m->slot, m->lease, m->gauges,
        [&failed, i](const std::string& why, bool) {
          std::printf("fatal %d %s\n", i, why.c_str());
          std::fflush(stdout);
          failed = true;
        });
    if (auto s = m->coordinator->start(); !s) {
      std::printf("fatal %d %s\n", i, s.error().c_str());
      return 1;
    }
    fleet.push_back(std::move(m));
  }
  const auto ready_count = [&] {
    int ready = 0;
    for (const auto& m : fleet) ready += m->may_issue() ? 1 : 0;
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
  const coord::ZkSettings zk_options{.hosts = config.value().zookeeper.hosts,
                                     .session_timeout = config.value().zookeeper.session_timeout,
                                     .connect_timeout = config.value().zookeeper.connect_timeout};
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
