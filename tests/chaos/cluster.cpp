#include "cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>

#include "../support/http_client.hpp"
#include "../support/wall_clock.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/sequences/period.hpp"
#include "snowflake/zk/node_data.hpp"

namespace snowflake::chaos {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::wall_us_now;

constexpr auto kRestartAfter = 1s;  // as systemd's RestartSec would
constexpr std::size_t kStateFsBytes = 512 * 1024;

std::string describe(const test::ExitStatus& s) {
  return s.signal ? fmt::format("signal {}", s.signal) : fmt::format("exit {}", s.code);
}

// `env` with sanitizer reports that must not look like "refused to start"
// (exit 1), over what it says of them (libfaketime's ASAN_OPTIONS).
std::map<std::string, std::string> with_sanitizer_env(std::map<std::string, std::string> env) {
  env["ASAN_OPTIONS"] = "verify_asan_link_order=0:exitcode=99";
  env["UBSAN_OPTIONS"] = "halt_on_error=1:exitcode=98";
  return env;
}

// The offset that puts a midnight of kChaosDaily's zone at real time
// `at_ms`: the nearer of the two around it.
std::int64_t offset_to_midnight(std::int64_t at_ms) {
  const auto rule = PeriodRule::make(PeriodReset::daily, kChaosDaily.zone);
  if (!rule) throw std::runtime_error(fmt::format("no time zone {}", kChaosDaily.zone));
  const Period p = rule->period_at(at_ms);
  const std::int64_t back = p.begins_ms - at_ms;  // <= 0
  const std::int64_t on = p.next_begins_ms - at_ms;
  return -back < on ? back : on;
}

}  // namespace

LayoutSettings chaos_layout(int worker_bits) {
  LayoutSettings l;
  l.time_bits = 41;
  l.worker_bits = worker_bits;
  l.sequence_bits = 22 - worker_bits;
  return l;
}

bool enter_private_mounts() {
  if (::unshare(CLONE_NEWNS) != 0) return false;
  return ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

ChaosCluster::ChaosCluster(ClusterOptions options) : options_(std::move(options)) {
  const auto logs = options_.out / "logs";
  std::filesystem::create_directories(logs);
  midnight_real_ms_ = test::wall_ms_now() + options_.midnight_in.count();
  base_offset_ms_ = offset_to_midnight(midnight_real_ms_);
  zk_clock_ = std::make_unique<test::WallClockOffset>(options_.out / "clock-zk",
                                                      test::offset_text(base_offset_ms_));
  std::vector<unsigned short> zk_ports;
  if (options_.ensemble) {
    ensemble_ = std::make_unique<test::ZooKeeperEnsemble>(logs, zk_clock_->jvm_env());
    for (int i = 0; i < ensemble_->size(); ++i) zk_ports.push_back(ensemble_->client_port(i));
  } else {
    zk_ = std::make_unique<test::ZooKeeperServer>(logs, zk_clock_->jvm_env());
    zk_ports.push_back(zk_->port());
  }
  {
    // For operators' commands (pool floor): ZooKeeper itself, no proxy.
    std::string hosts;
    for (const auto port : zk_ports)
      hosts += fmt::format("{}127.0.0.1:{}", hosts.empty() ? "" : ",", port);
    admin_config_ = options_.out / "admin.json";
    write_config_file(admin_config_, hosts, options_.out / "state" / "admin", 0, 99);
  }
  for (const auto& q : kChaosSequences) {
    admin_command(seq_create_args(q, q.start), fmt::format("seq-create-{}", q.tag));
  }
  admin_command({"seq", "create", kChaosDaily.tag, "--reset", "daily", "--time-zone",
                 kChaosDaily.zone, "--template", kChaosDaily.number_template, "--start",
                 std::to_string(kChaosDaily.start), "--step", std::to_string(kChaosDaily.step)},
                fmt::format("seq-create-{}", kChaosDaily.tag));
  for (int d = 0; d < options_.daemons; ++d) {
    auto s = std::make_unique<Slot>();
    s->index = d;
    s->port = test::free_port();
    for (const auto port : zk_ports) s->proxies.push_back(std::make_unique<test::FaultProxy>(port));
    s->clock = std::make_unique<test::WallClockOffset>(options_.out / fmt::format("clock-d{}", d),
                                                       test::offset_text(base_offset_ms_));
    s->state = options_.out / "state" / fmt::format("d{}", d);
    std::filesystem::create_directories(s->state);
    if (options_.tmpfs_state) {
      const std::string size = fmt::format("size={},mode=0700", kStateFsBytes);
      if (::mount("tmpfs", s->state.c_str(), "tmpfs", 0, size.c_str()) != 0) {
        throw std::runtime_error("cannot mount a tmpfs at " + s->state.string());
      }
    }
    write_config(*s);
    slots_.push_back(std::move(s));
  }
  {
    std::lock_guard lock(mutex_);
    for (auto& s : slots_) launch(*s);
  }
  supervisor_ = std::thread([this] { supervise(); });
  forgetter_ = std::thread([this] { forget_runs(); });
}

ChaosCluster::~ChaosCluster() {
  stopping_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  if (forgetter_.joinable()) forgetter_.join();
  for (auto& s : slots_) {
    if (s->process) s->process->send_signal(SIGCONT);  // a frozen one must die too
    s->process.reset();                                // kills it, by pid
    if (options_.tmpfs_state) ::umount2(s->state.c_str(), MNT_DETACH);
  }
}

void ChaosCluster::write_config(Slot& s) {
  std::string hosts;
  for (const auto& p : s.proxies) hosts += (hosts.empty() ? "" : ",") + p->hosts();
  s.config = options_.out / fmt::format("d{}.json", s.index);
  write_config_file(s.config, hosts, s.state, s.port.load(), s.index);
}

void ChaosCluster::write_config_file(const std::filesystem::path& path, const std::string& hosts,
                                     const std::filesystem::path& state, unsigned short port,
                                     int index) const {
  const nlohmann::json config = {
      {"service", "chaos"},
      {"layout", nlohmann::json::parse(encode_layout(layout()))},
      {"coordinator",
       {{"type", options_.strategy},
        {"state_dir", state.string()},
        {"advertise", fmt::format("chaos-d{}:9000", index)},
        {"heartbeat_interval_ms", 300},
        {"lease_timeout_ms", 1500},
        {"reclaim_after_ms",
         options_.lease_holders ? kChaosHolderReclaimAfterMs : kChaosReclaimAfterMs},
        {"safety_margin_ms", 500},
        {"max_skew_ms", 2000},
        {"max_boot_wait_ms", 2000},
        {"persist_interval_ms", 100},
        // The most these leases allow (below lease - heartbeat): the
        // restore runbook's command lands within it on a busy machine.
        {"restore_grace_ms", 1000}}},
      {"zookeeper",
       {{"hosts", hosts},
        {"root", "/snowflake/chaos"},
        {"session_timeout_ms", kChaosSessionTimeoutMs},
        {"connect_timeout_ms", 2000}}},
      {"http",
       {{"listen", fmt::format("127.0.0.1:{}", port)},
        {"io_threads", 2},
        {"drain_timeout_ms", 2000}}},
      // Ranges that last about 4 s at the load's pace: taken
      // often, and still enough to serve through most of
      // ZooKeeper's outages (up to 5 s here).
      {"sequences", {{"segment_duration_s", 4}, {"max_step", 5000}, {"max_wait_ms", 500}}}};
  nlohmann::json c = config;
  if (options_.strategy == "static") {
    // Worker IDs from the config, one each (the operators' commands' config
    // issues nothing: 0); sequences from ZooKeeper, asked for.
    c["coordinator"]["static_worker_id"] = index < (1 << options_.worker_bits) ? index : 0;
    c["sequences"]["enabled"] = true;
  }
  if (options_.lease_holders) {
    // One free worker ID kept for a daemon that restarts on a fresh state
    // dir (the others hold theirs).
    c["leases"] = {{"enabled", true}, {"reserved_worker_ids", 1}, {"max_duration_ms", 1500}};
  }
  // The epoch as Unix ms: the layout's JSON spells it epoch_ms.
  c["layout"]["epoch"] = c["layout"]["epoch_ms"];
  c["layout"].erase("epoch_ms");
  std::ofstream(path) << c.dump(2) << '\n';
}

std::unique_ptr<test::ChildProcess> ChaosCluster::raise_floor(std::uint64_t above_id,
                                                              std::chrono::milliseconds timeout,
                                                              const std::string& log_name) const {
  return std::make_unique<test::ChildProcess>(
      std::vector<std::string>{SNOWFLAKED_PATH, "pool", "floor", "--config", admin_config_.string(),
                               "--above-id", std::to_string(above_id), "--timeout",
                               std::to_string(timeout.count())},
      command_env(), options_.out / "logs" / log_name);
}

std::unique_ptr<test::ChildProcess> ChaosCluster::raise_sequence(
    const std::string& tag, std::uint64_t above, std::chrono::milliseconds timeout,
    const std::string& log_name) const {
  return std::make_unique<test::ChildProcess>(
      std::vector<std::string>{SNOWFLAKED_PATH, "seq", "raise", tag, "--above",
                               std::to_string(above), "--timeout", std::to_string(timeout.count()),
                               "--config", admin_config_.string()},
      command_env(), options_.out / "logs" / log_name);
}

std::map<std::string, std::string> ChaosCluster::command_env() const {
  return with_sanitizer_env(test::fixed_wall_clock_offset(test::offset_text(base_offset_ms_)));
}

int ChaosCluster::run_admin(std::vector<std::string> args, const std::string& log_name) const {
  return admin_run(std::move(args), log_name, nullptr);
}

std::string ChaosCluster::admin_output(std::vector<std::string> args,
                                       const std::string& log_name) const {
  std::string out;
  return admin_run(std::move(args), log_name, &out) == 0 ? out : "";
}

int ChaosCluster::admin_run(std::vector<std::string> args, const std::string& log_name,
                            std::string* out) const {
  args.insert(args.begin(), SNOWFLAKED_PATH);
  args.insert(args.end(), {"--config", admin_config_.string()});
  test::ChildProcess command(args, command_env(), options_.out / "logs" / log_name);
  const auto status = command.wait_for_exit(30s);
  if (!status) {
    command.send_signal(SIGKILL);
    return -1;
  }
  if (out) *out = command.stdout_text();
  return status->signal ? -1 : status->code;
}

void ChaosCluster::admin_command(std::vector<std::string> args, const std::string& log_name) const {
  const std::string what = fmt::format("{}", fmt::join(args, " "));
  if (const int code = run_admin(std::move(args), log_name); code != 0) {
    throw std::runtime_error(
        fmt::format("snowflaked {} failed (exit {}): see logs/{}", what, code, log_name));
  }
}

void ChaosCluster::forget_sequence_run(const Slot& s) {
  std::ifstream in(s.state / "sequence-run");
  if (!in) return;  // it served no sequence
  const auto record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("run") || !record["run"].is_string()) return;
  const std::string run = record["run"].get<std::string>();
  std::lock_guard lock(forget_mutex_);
  to_forget_.emplace_back(run, fmt::format("seq-forget-d{}-run{}", s.index, s.run.load()));
}

void ChaosCluster::forget_runs() {
  while (!stopping_) {
    std::optional<std::pair<std::string, std::string>> next;
    {
      std::lock_guard lock(forget_mutex_);
      if (!to_forget_.empty()) next = to_forget_.front();
    }
    if (!next) {
      std::this_thread::sleep_for(100ms);
      continue;
    }
    // 0: forgotten; 2: no holder node (the run held nothing, or deleted it
    // at a clean stop). Anything else (ZooKeeper away): again, as an
    // operator would.
    const int code = run_admin({"seq", "forget", next->first, "--force"}, next->second);
    if (code == 0 || code == 2) {
      std::lock_guard lock(forget_mutex_);
      to_forget_.pop_front();
    } else {
      std::this_thread::sleep_for(500ms);
    }
  }
}

void ChaosCluster::launch(Slot& s) {
  const int run = s.run.load() + 1;
  auto env = with_sanitizer_env(s.clock->env());
  if (s.index < options_.suspended)
    env[test::kSuspendedForEnv] = std::to_string(1000 + 100 * s.index);
  s.process = std::make_unique<test::ChildProcess>(
      std::vector<std::string>{SNOWFLAKED_PATH, "--config", s.config.string()}, env,
      options_.out / "logs" / fmt::format("d{}-run{}", s.index, run));
  s.run = run;
  s.restart_at.reset();
}

void ChaosCluster::supervise() {
  while (!stopping_) {
    std::this_thread::sleep_for(100ms);
    std::lock_guard lock(mutex_);
    for (auto& s : slots_) {
      if (s->held_down || !s->process) continue;
      if (s->restart_at) {
        if (Clock::now() >= *s->restart_at) launch(*s);
        continue;
      }
      if (s->process->running()) continue;
      const auto status = s->process->wait_for_exit(0ms).value_or(test::ExitStatus{});
      if (status.code == 1 &&
          s->process->stderr_text().find("cannot listen on") != std::string::npos) {
        s->port = test::free_port();  // someone took its port meanwhile
        write_config(*s);
      } else if (status.code != 1) {
        crashes_.push_back(fmt::format(
            "d{} run {} ended by itself: {}; its log: {}", s->index, s->run.load(),
            describe(status),
            (options_.out / "logs" / fmt::format("d{}-run{}", s->index, s->run.load())).string()));
      }
      s->restart_at = Clock::now() + kRestartAfter;
    }
  }
}

bool ChaosCluster::wait_ready(std::chrono::milliseconds within) {
  const int workers = 1 << options_.worker_bits;
  const int needed = std::min(daemons(), workers);
  const auto deadline = Clock::now() + within;
  for (;;) {
    int ready = 0;
    for (int d = 0; d < daemons(); ++d) {
      try {
        if (test::http_get(port(d), "/ready")->status == 200) ++ready;
      } catch (const std::exception&) {
      }
    }
    if (ready >= needed) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}

std::int64_t ChaosCluster::max_clock_offset_ms(int d, std::int64_t from_us,
                                               std::int64_t to_us) const {
  std::lock_guard lock(mutex_);
  const auto& changes = slots_[idx(d)]->offsets;
  // The first change that may have taken effect at or after from_us.
  const auto first =
      std::lower_bound(changes.begin(), changes.end(), from_us,
                       [](const Slot::OffsetChange& c, std::int64_t t) { return c.to_us < t; });
  std::int64_t most = first == changes.begin() ? 0 : std::prev(first)->after_ms;
  for (auto c = first; c != changes.end() && c->from_us <= to_us; ++c) {
    most = std::max({most, c->before_ms, c->after_ms});
  }
  return base_offset_ms_ + most;
}

void ChaosCluster::stall(int d, bool on) {
  // Counted: net_stalls may overlap on a daemon.
  std::lock_guard lock(stall_mutex_);
  Slot& s = *slots_[idx(d)];
  const int before = s.stalls;
  s.stalls = std::max(0, s.stalls + (on ? 1 : -1));
  if ((before == 0) == (s.stalls == 0)) return;
  for (auto& p : s.proxies) on ? p->stall() : p->heal();
}

void ChaosCluster::delay(int d, std::chrono::milliseconds each_chunk) {
  for (auto& p : slots_[idx(d)]->proxies) p->set_delay(each_chunk);
}

void ChaosCluster::reset_connections(int d) {
  for (auto& p : slots_[idx(d)]->proxies) p->reset();
}

void ChaosCluster::lose_next_reply(int d, std::chrono::milliseconds outage, bool set_data) {
  // Heartbeats and claims are multis in both strategies.
  const int op = set_data ? test::FaultProxy::kSetData : test::FaultProxy::kMulti;
  for (auto& p : slots_[idx(d)]->proxies) p->lose_next_reply(op, outage);
}

std::string ChaosCluster::dump_stacks(const test::ChildProcess& process,
                                      const std::string& log_name) const {
  // Where it hangs is the whole diagnosis; the record keeps every thread's
  // stack (gdb, where the machine has it).
  if (::access("/usr/bin/gdb", X_OK) != 0) return "";
  test::ChildProcess gdb(
      {"/usr/bin/gdb", "-p", std::to_string(process.pid()), "-batch", "-ex", "thread apply all bt"},
      {}, options_.out / "logs" / log_name);
  if (!gdb.wait_for_exit(60s)) gdb.send_signal(SIGKILL);
  return fmt::format(" (its threads' stacks: logs/{})", log_name);
}

void ChaosCluster::stop_daemon(int d, int signal) {
  test::ChildProcess* process = nullptr;
  {
    std::lock_guard lock(mutex_);
    Slot& s = *slots_[idx(d)];
    s.held_down = true;
    if (!s.process) return;
    process = s.process.get();
  }
  if (signal == SIGTERM) {
    // A supervisor's stop: from the moment the daemon blocks the signal, its
    // first step; before that only the loader and the sanitizers run, which
    // no program can take a signal in (a TERM 5 ms after a restart ended a
    // run with "signal 15" and an empty log).
    process->send_signal(SIGCONT);  // a frozen one blocks nothing new
    const auto deadline = Clock::now() + 10s;
    while (process->running() && !process->blocks_signal(SIGTERM) && Clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
  }
  {
    std::lock_guard lock(mutex_);
    process->send_signal(signal);
    process->send_signal(SIGCONT);  // SIGTERM must reach a frozen one
    slots_[idx(d)]->frozen = false;
  }
  if (!process->wait_for_exit(20s)) {
    const std::string stacks = dump_stacks(*process, fmt::format("d{}-stacks", d));
    std::lock_guard lock(mutex_);
    crashes_.push_back(fmt::format("d{}: no exit 20 s after signal {}{}", d, signal, stacks));
    process->send_signal(SIGKILL);
    process->wait_for_exit(10s);
  } else if (signal == SIGTERM) {
    const auto status = process->wait_for_exit(0ms).value();
    if (status.code != 0) {
      std::lock_guard lock(mutex_);
      crashes_.push_back(fmt::format("d{}: SIGTERM gave {}", d, describe(status)));
    }
  }
}

void ChaosCluster::start_daemon(int d, bool fresh_state) {
  // Its old run's holder node is forgotten (in the background: ZooKeeper
  // may be down now) before its state directory is wiped below.
  if (fresh_state) forget_sequence_run(*slots_[idx(d)]);
  std::lock_guard lock(mutex_);
  Slot& s = *slots_[idx(d)];
  if (fresh_state) {  // a new machine's empty directory (the mount point stays)
    for (const auto& entry : std::filesystem::directory_iterator(s.state)) {
      std::filesystem::remove_all(entry.path());
    }
  }
  s.held_down = false;
  launch(s);
}

void ChaosCluster::freeze(int d, bool frozen) {
  std::lock_guard lock(mutex_);
  Slot& s = *slots_[idx(d)];
  if (!s.process || s.held_down) return;
  s.process->send_signal(frozen ? SIGSTOP : SIGCONT);
  s.frozen = frozen;
}

void ChaosCluster::set_clock_offset_ms(int d, std::int64_t offset_ms) {
  Slot& s = *slots_[idx(d)];
  // Under the lock through the file's replacement: a client that asks what
  // the clock may have read up to some instant must see this change if the
  // daemon could have.
  std::lock_guard lock(mutex_);
  const std::int64_t from = wall_us_now();
  s.clock->set_ms(base_offset_ms_ + offset_ms);
  s.offsets.push_back({from, wall_us_now(), s.offset_ms, offset_ms});
  s.offset_ms = offset_ms;
}

std::int64_t ChaosCluster::clock_offset_ms(int d) const {
  std::lock_guard lock(mutex_);
  return slots_[idx(d)]->offset_ms;
}

void ChaosCluster::state_unwritable(int d, bool on) {
  // Root may write anywhere; but nobody can create a file where a directory
  // stands: the state file's temp path becomes one.
  const auto temp = slots_[idx(d)]->state / "worker.json.tmp";
  std::error_code ec;
  std::filesystem::remove_all(temp, ec);
  if (on) std::filesystem::create_directory(temp, ec);
}

void ChaosCluster::state_full(int d, bool on) {
  const auto filler = slots_[idx(d)]->state / "filler";
  std::error_code ec;
  std::filesystem::remove(filler, ec);
  if (!on || !options_.tmpfs_state) return;
  std::ofstream out(filler, std::ios::binary);
  const std::string block(4096, 'x');
  while (out.write(block.data(), static_cast<std::streamsize>(block.size())) && out.flush()) {
  }
}

int ChaosCluster::zk_stop(int server) {
  if (zk_) {
    zk_->stop();
    return 0;
  }
  int i = server >= 0 ? server : ensemble_->leader();
  if (i < 0) i = 0;
  ensemble_->kill(i);
  return i;
}

void ChaosCluster::zk_start(int server) {
  if (zk_) return zk_->start();
  ensemble_->start(server);
}

int ChaosCluster::zk_freeze(int server, bool frozen, int which) {
  if (zk_) {
    frozen ? zk_->pause() : zk_->resume();
    return 0;
  }
  int i = frozen ? (server >= 0 ? server : ensemble_->leader()) : which;
  if (i < 0) i = 0;
  frozen ? ensemble_->pause(i) : ensemble_->resume(i);
  return i;
}

void ChaosCluster::zk_wipe() { zk_ ? zk_->wipe() : ensemble_->wipe(); }

void ChaosCluster::zk_back_up() { zk_backup_ = zk_ ? zk_->back_up() : ensemble_->back_up(); }

bool ChaosCluster::zk_restore(const std::function<void()>& while_down) {
  if (!zk_backup_) return false;
  zk_ ? zk_->restore(*zk_backup_, while_down) : ensemble_->restore(*zk_backup_, while_down);
  return true;
}

bool ChaosCluster::is_up(int d) const {
  std::lock_guard lock(mutex_);
  const Slot& s = *slots_[idx(d)];
  return s.process && !s.held_down && !s.frozen && !s.restart_at && s.process->running();
}

std::string ChaosCluster::log_text(int d) const {
  std::lock_guard lock(mutex_);
  const Slot& s = *slots_[idx(d)];
  return s.process ? s.process->stderr_text() : std::string();
}

std::vector<std::string> ChaosCluster::shut_down() {
  stopping_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  if (forgetter_.joinable()) forgetter_.join();
  for (int d = 0; d < daemons(); ++d) {
    bool up = false;
    {
      std::lock_guard lock(mutex_);
      Slot& s = *slots_[idx(d)];
      up = s.process && !s.held_down && !s.restart_at && s.process->running();
    }
    if (up) stop_daemon(d, SIGTERM);
  }
  std::lock_guard lock(mutex_);
  return crashes_;
}

}  // namespace snowflake::chaos
