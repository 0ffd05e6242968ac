#pragma once
// The real cluster a chaos run breaks: a ZooKeeper server (or a 3-node
// ensemble) and K snowflaked daemons on loopback, each reaching ZooKeeper
// through fault proxies of its own, each with its own wall clock (libfaketime)
// and state directory. It supervises the daemons as systemd would: a daemon
// that exits by itself with 1 (it refused to start) is started again after a
// second; any other unplanned exit is a crash, and is reported.
//
// Everything it starts is stopped, by pid, when it goes.

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../support/child_process.hpp"
#include "../support/fault_proxy.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake::chaos {

struct ClusterOptions {
  int daemons = 4;
  bool ensemble = false;
  std::string strategy = "recycle";
  std::filesystem::path out;  // logs, state dirs, clock files
  // State dirs on small tmpfs mounts of their own (so "disk full" can be
  // made); needs a private mount namespace (see enter_private_mounts).
  bool tmpfs_state = false;
  // The pool: 2^worker_bits worker IDs (chaos_layout).
  int worker_bits = 2;
  // Real time from the cluster's start at which its clocks read a midnight
  // of kChaosDaily's zone (the daily sequence's boundary, inside the run).
  std::chrono::milliseconds midnight_in{30'000};
  // The first this many daemons run as on hosts that were suspended
  // (kSuspendedForEnv: CLOCK_BOOTTIME 1000 s, 1100 s, ... ahead of
  // CLOCK_MONOTONIC; root only).
  int suspended = 0;
  // The daemons lease worker IDs to generators in other processes
  // (chaos/holders.hpp): leases.enabled, the pool's first `daemons` worker
  // IDs left to them, and a reclaim long enough for a lease (the longest,
  // 1.5 s, must end before the reaper's reclaim_after less the margin and
  // the skew bound: kChaosHolderReclaimAfterMs).
  bool lease_holders = false;
};

// The daemons' timings that bound how soon a dead one's worker ID serves
// again (ReclaimBound).
constexpr std::int64_t kChaosSessionTimeoutMs = 2000;
constexpr std::int64_t kChaosReclaimAfterMs = 2500;
constexpr std::int64_t kChaosHolderReclaimAfterMs = 4000;

// The layout chaos daemons use: 2 worker bits by default, so the pool is
// small and worker IDs pass between daemons often; the sequence field takes
// what the worker field leaves of 22 bits.
LayoutSettings chaos_layout(int worker_bits = 2);

// The dense sequences the load asks for, made with `seq create` before the
// daemons start. Small ranges (the daemons' sequences config sizes them to
// last a few seconds), so that ranges are taken, lost and given back often.
// One is strict (`--order strict`: one owner at a time, the others passing
// requests on to it), its answers checked for real-time order.
struct ChaosSequence {
  const char* tag;
  std::uint64_t start;
  std::int64_t step;
  bool strict = false;
};
inline constexpr ChaosSequence kChaosSequences[] = {
    {"s.dense", 1000, 10}, {"s.wide", 5'000'000, 100}, {"s.strict", 1, 10, true}};

// `seq create`'s arguments for one of them, starting at `start`.
inline std::vector<std::string> seq_create_args(const ChaosSequence& q, std::uint64_t start) {
  std::vector<std::string> args{
      "seq", "create", q.tag, "--start", std::to_string(start), "--step", std::to_string(q.step)};
  if (q.strict) args.insert(args.end(), {"--order", "strict"});
  return args;
}

// The load's sequence that restarts each day. Every clock of the cluster
// (ZooKeeper's, each daemon's, the operators' commands') runs ahead of real
// time, or behind it, by one base offset, so that a midnight of its zone
// falls inside the run; the nemesis's clock faults move a daemon's clock
// from there.
struct ChaosDailySequence {
  const char* tag;
  const char* zone;
  const char* number_template;  // printed: "<period>/<number>"
  std::uint64_t start;
  std::int64_t step;
};
inline constexpr ChaosDailySequence kChaosDaily{"s.daily", "Europe/Berlin", "{yyyy}-{MM}-{dd}/{n}",
                                                1, 10};

// Moves this process (and its children to come) into a mount namespace of
// its own, so tmpfs mounts vanish with it. False if not allowed (not root).
bool enter_private_mounts();

class ChaosCluster {
 public:
  explicit ChaosCluster(ClusterOptions options);
  ~ChaosCluster();
  ChaosCluster(const ChaosCluster&) = delete;
  ChaosCluster& operator=(const ChaosCluster&) = delete;

  int daemons() const { return static_cast<int>(slots_.size()); }
  LayoutSettings layout() const { return chaos_layout(options_.worker_bits); }
  // Waits until as many daemons can issue as there are worker IDs (all of
  // them when there are no more daemons than that: the rest are standbys,
  // waiting for a free worker ID); false at the deadline.
  bool wait_ready(std::chrono::milliseconds within);

  // For the load: where daemon `d` listens, and which run of it that is.
  unsigned short port(int d) const { return slots_[idx(d)]->port.load(); }
  int run(int d) const { return slots_[idx(d)]->run.load(); }
  // How far ahead of real time daemon `d`'s wall clock was, at most, during
  // [from_us, to_us] (real clock, us): the base offset and the faults'.
  std::int64_t max_clock_offset_ms(int d, std::int64_t from_us, std::int64_t to_us) const;
  // coordinator.reclaim_after_ms, as configured.
  std::int64_t reclaim_after_ms() const {
    return options_.lease_holders ? kChaosHolderReclaimAfterMs : kChaosReclaimAfterMs;
  }
  // What a lease holder runs with: the cluster's clock (its leases' first
  // and last timestamps are by it), as an operator's command does.
  std::map<std::string, std::string> holder_env() const { return command_env(); }
  // How far every clock of the cluster is ahead of real time (ms; behind
  // if negative), and the real time (Unix ms) at which they read midnight.
  std::int64_t base_offset_ms() const { return base_offset_ms_; }
  std::int64_t midnight_real_ms() const { return midnight_real_ms_; }

  // Faults. Each returns a word on what it did ("" if nothing could be done).
  void stall(int d, bool on);
  void delay(int d, std::chrono::milliseconds each_chunk);
  void reset_connections(int d);
  // The next reply to a multi (heartbeats and claims), or with `set_data` to
  // a set (a sequence's range taken or given back, a holder node written).
  void lose_next_reply(int d, std::chrono::milliseconds outage, bool set_data = false);
  void stop_daemon(int d, int signal);  // kill -9 or SIGTERM; kept down until start_daemon
  void start_daemon(int d, bool fresh_state);
  void freeze(int d, bool frozen);  // SIGSTOP / SIGCONT
  // A fault's offset of daemon `d`'s clock, on top of the base offset.
  void set_clock_offset_ms(int d, std::int64_t offset_ms);
  std::int64_t clock_offset_ms(int d) const;
  void state_unwritable(int d, bool on);
  void state_full(int d, bool on);
  // ZooKeeper: `server` -1 is the leader (ensemble); returns the index hit.
  int zk_stop(int server);
  void zk_start(int server);
  int zk_freeze(int server, bool frozen, int which = 0);
  // ZooKeeper losing its data, every server at once: back empty, or back
  // from the last backup (taken with the servers stopped for a moment).
  void zk_wipe();
  void zk_back_up();
  // False if there is no backup; `while_down` runs with ZooKeeper stopped,
  // its data replaced, before it starts again.
  bool zk_restore(const std::function<void()>& while_down);
  // Whether daemon `d` runs, neither stopped nor frozen on purpose.
  bool is_up(int d) const;
  // What daemon `d`'s current run has logged so far ("" before its first).
  std::string log_text(int d) const;
  // `snowflaked ARGS --config <admin>` to its end (30 s at most): its exit
  // code, -1 if it did not end.
  int run_admin(std::vector<std::string> args, const std::string& log_name) const;
  // The same, with what it printed on stdout into `out`, whatever its exit.
  int run_admin(std::vector<std::string> args, const std::string& log_name,
                std::string* out) const {
    return admin_run(std::move(args), log_name, out);
  }
  // The same, with what it printed on stdout ("" unless it exited 0).
  std::string admin_output(std::vector<std::string> args, const std::string& log_name) const;

  // Starts `snowflaked pool floor --above-id N` against ZooKeeper itself (no
  // proxy), its output in logs/<log_name>.
  std::unique_ptr<test::ChildProcess> raise_floor(std::uint64_t above_id,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string& log_name) const;
  // Starts `snowflaked seq raise <tag> --above N` likewise.
  std::unique_ptr<test::ChildProcess> raise_sequence(const std::string& tag, std::uint64_t above,
                                                     std::chrono::milliseconds timeout,
                                                     const std::string& log_name) const;

  // Stops the supervisor, then every daemon with SIGTERM: each must exit 0.
  // Returns the crashes seen over the run (unplanned exits but for 1), and
  // unclean stops at the end.
  std::vector<std::string> shut_down();

 private:
  // Every thread's stack of a running daemon into logs/<log_name>; what to
  // add to its crash line.
  std::string dump_stacks(const test::ChildProcess& process, const std::string& log_name) const;
  struct Slot {
    int index = 0;
    std::atomic<unsigned short> port{0};
    std::atomic<int> run{-1};
    std::vector<std::unique_ptr<test::FaultProxy>> proxies;  // one per ZooKeeper server
    std::unique_ptr<test::WallClockOffset> clock;
    std::filesystem::path state;
    std::filesystem::path config;
    std::unique_ptr<test::ChildProcess> process;
    int stalls = 0;          // stall()s not yet healed
    bool held_down = false;  // stopped on purpose
    bool frozen = false;
    std::optional<std::chrono::steady_clock::time_point> restart_at;
    struct OffsetChange {
      std::int64_t from_us, to_us;  // the change took effect somewhere in here
      std::int64_t before_ms, after_ms;
    };
    std::vector<OffsetChange> offsets;
    std::int64_t offset_ms = 0;
  };

  static std::size_t idx(int d) { return static_cast<std::size_t>(d); }
  void write_config(Slot& s);
  void write_config_file(const std::filesystem::path& path, const std::string& hosts,
                         const std::filesystem::path& state, unsigned short port, int index) const;
  void launch(Slot& s);  // mutex_ held
  // The same, and throws if it does not exit 0.
  void admin_command(std::vector<std::string> args, const std::string& log_name) const;
  // A daemon that is gone for good (its state dir wiped): what its last run
  // held of the sequences is forgotten, as an operator does (`seq forget`),
  // by the forgetter thread: as soon as ZooKeeper answers.
  void forget_sequence_run(const Slot& s);
  void forget_runs();  // the forgetter thread
  void supervise();

  // The environment of an operator's command: the cluster's clock, and
  // sanitizer reports that do not look like a refusal.
  std::map<std::string, std::string> command_env() const;
  // run_admin, and what it printed on stdout into `out` if given.
  int admin_run(std::vector<std::string> args, const std::string& log_name, std::string* out) const;

  ClusterOptions options_;
  std::int64_t midnight_real_ms_ = 0;
  std::int64_t base_offset_ms_ = 0;
  std::unique_ptr<test::WallClockOffset> zk_clock_;
  std::unique_ptr<test::ZooKeeperServer> zk_;
  std::unique_ptr<test::ZooKeeperEnsemble> ensemble_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::filesystem::path admin_config_;  // ZooKeeper without proxies, for pool floor
  std::optional<std::filesystem::path> zk_backup_;
  mutable std::mutex mutex_;  // slots' processes and offsets
  std::mutex stall_mutex_;    // slots' stalls
  std::vector<std::string> crashes_;
  std::atomic<bool> stopping_{false};
  std::thread supervisor_;
  std::mutex forget_mutex_;
  std::deque<std::pair<std::string, std::string>> to_forget_;  // run, log name
  std::thread forgetter_;
};

}  // namespace snowflake::chaos
