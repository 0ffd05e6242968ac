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
//   stats  ->  stats REQUESTS HEARTBEATS READY REAPERS RECLAIMED
//              (summed over its coordinators; READY: how many may issue now)
//   stop   ->  every coordinator shut down (its worker ID given back), then
//              stopped SECONDS, and the program exits
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

  for (std::string line; std::getline(std::cin, line);) {
    if (line == "stats") {
      unsigned long long beats = 0;
      unsigned long long reclaimed = 0;
      int reapers = 0;
      for (const auto& m : fleet) {
        beats += m->gauges.heartbeats.load();
        reclaimed += m->gauges.workers_reclaimed.load();
        reapers += m->gauges.reaper.load() ? 1 : 0;
      }
      std::printf("stats %llu %llu %d %d %llu\n",
                  static_cast<unsigned long long>(zookeeper_requests_sent.load()), beats,
                  ready_count(), reapers, reclaimed);
    } else if (line == "stop") {
      const auto stopping = Steady::now();
      for (auto& m : fleet) m->coordinator->shutdown();
      std::printf("stopped %.3f\n", seconds_since(stopping));
      std::fflush(stdout);
      return failed ? 1 : 0;
    }
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}
