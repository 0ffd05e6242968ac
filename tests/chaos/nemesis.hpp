#pragma once
// The nemesis's plan: a random schedule of faults drawn from a seed, so a
// failing run can be replayed. The plan says what and when; the runner
// (chaos_runner.cpp) does it to a real cluster. The last stretch of a run is
// quiet (every fault over), so the cluster can be seen to recover.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace snowflake::chaos {

struct PlannedFault {
  std::int64_t at_ms = 0;        // from the start of the load
  std::int64_t duration_ms = 0;  // 0: instant
  std::string kind;
  int target = 0;           // a daemon's index; for holder_*: a lease holder's; for zk_*: a
                            // server's index, -1 the leader
                            // (zk_wipe, zk_restore, zk_backup: every server);
                            // floor_raise: -1 (the cluster); seq_raise: which of the load's
                            // sequences (0 or 1)
  std::int64_t amount = 0;  // clock_step: ms; clock_slew: ppm; net_delay: ms; net_lose_reply:
                            // outage ms; floor_raise: the floor's time, from real time at the start
                            // (ms); seq_raise: how far above the highest number the load was given
                            // seq_lose_reply: outage ms, as net_lose_reply
  bool fresh_state = false;  // kill: restart with an empty state dir

  std::string describe() const;
};

struct NemesisOptions {
  std::uint64_t seed = 1;
  std::chrono::milliseconds length{60'000};
  int daemons = 4;
  bool ensemble = false;
  bool disk_full = true;  // the runner can fill a state dir's file system
  // The kinds drawn (empty: all), and the mean time
  // between two draws: kills alone and far apart leave the quiet windows
  // that time a worker ID's reclaim against its bound (check_reclaim.hpp).
  std::vector<std::string> only_kinds{};  // drawn_kinds() names
  std::int64_t mean_gap_ms = 1200;
  // Static daemons (worker IDs from the config): no pool to raise a floor
  // of, and no kill that restarts on a fresh state dir (their state file is
  // all that remembers the last time used: docs/configuration.md).
  bool static_workers = false;
  // Lease holders (generators in other processes leasing worker IDs:
  // chaos/holders.hpp): with any, their faults are drawn too (holder_kill,
  // holder_pause, holder_cut); with none, none is, and a seed's plan is
  // what it always was.
  int holders = 0;
};

// Every kind the plan may hold.
const std::vector<std::string>& fault_kinds();
// The kinds a plan draws (NemesisOptions::only_kinds picks among them):
// cut_off_and_jump is drawn and planned as a net_stall and a clock_step;
// zk_backup comes with each zk_restore. holder_* only with holders.
const std::vector<std::string>& drawn_kinds();

// Deterministic in the options. No two process faults (kill, pause, term) on
// one daemon overlap, and none overlaps another fault of that daemon; at
// most one ZooKeeper fault at a time (a zk_restore's from its zk_backup on), one floor_raise (its
// duration is the time `pool floor` is given to confirm) and one seq_raise (likewise `seq raise`);
// all end before the quiet stretch.
std::vector<PlannedFault> plan_faults(const NemesisOptions& options);

// The quiet stretch at the end of a run of `length`.
std::chrono::milliseconds quiet_period(std::chrono::milliseconds length);

}  // namespace snowflake::chaos
