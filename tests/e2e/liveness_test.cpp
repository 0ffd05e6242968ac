// GET /health as a liveness answer, against a real daemon whose threads are
// stopped one at a time: ptrace stops a single thread (SIGSTOP would stop
// them all, and then nothing answers at all), so the rest of the daemon runs
// on and must notice. The threads are found by the names the daemon gives
// them (thread_name.hpp).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/ptrace.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// The id of the daemon's thread named `name`; -1 if none.
pid_t thread_named(pid_t pid, const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator(std::filesystem::path("/proc") /
                                                              std::to_string(pid) / "task")) {
    std::ifstream in(task.path() / "comm");
    std::string comm;
    std::getline(in, comm);
    if (comm == name) return static_cast<pid_t>(std::stol(task.path().filename().string()));
  }
  return -1;
}

// Whether stopped thread `tid` of `pid` waits in the kernel: futex,
// restart_syscall (a futex or sleep cut by the stop), epoll_wait, poll or
// clock_nanosleep (x86-64 numbers). Stopped there it holds no lock; stopped
// anywhere else it may hold one the rest of the daemon needs (a log sink's,
// the allocator's, a sanitizer's), and then nothing answers at all.
bool waits_in_kernel(pid_t pid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall");
  std::string number;
  in >> number;
  return number == "202" || number == "219" || number == "232" || number == "7" || number == "230";
}

// Holds one thread of another process stopped while it lives (ptrace stops
// only the thread it is attached to), stopped where it waits in the kernel.
class StoppedThread {
 public:
  StoppedThread(pid_t pid, pid_t tid) : tid_(tid) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) != 0) return;
      int status = 0;
      if (::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) == 0 &&
          ::waitpid(tid_, &status, __WALL) == tid_ && waits_in_kernel(pid, tid_)) {
        attached_ = true;
        return;
      }
      ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
      std::this_thread::sleep_for(10ms);  // let it run on to its next wait
    }
  }
  ~StoppedThread() {
    if (attached_) ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
  }
  StoppedThread(const StoppedThread&) = delete;
  StoppedThread& operator=(const StoppedThread&) = delete;
  bool stopped() const { return attached_; }

 private:
  pid_t tid_;
  bool attached_ = false;
};

// /health's answer as "<status> <error code> <message>", or "" without one.
// A connection handed to the stopped event loop gets no answer: short
// timeouts, and the poll asks again on a new connection.
std::string health(const Daemon& d) {
  HttpConnection c(d.port(), "127.0.0.1", 1s);
  const auto r = c.request("/health");
  if (!r) return "";
  if (r->status == 200) return "200";
  const auto body = json::parse(r->body, nullptr, false);
  return std::to_string(r->status) + " " + body.value("error", "") + " " +
         body.value("message", "");
}

}  // namespace

TEST_CASE("/health: 503 once the heartbeat thread or an event loop is stopped, 200 again after",
          "[health][e2e]") {
  ZooKeeperServer zk;
  TempDir state;
  // session 2 s + connect 2 s: a thread may be stuck for 4 s before it counts.
  Daemon d(
      cluster_config(zk.hosts(), "recycle", state.path(), {{"http", {{"io_threads", 2}}}}).dump());
  wait_ready(d);
  REQUIRE(health(d) == "200");
  const auto sick_then_well = [&](const std::string& thread, const std::string& reason) {
    const pid_t tid = thread_named(d.process().pid(), thread);
    REQUIRE(tid > 0);
    std::string answer;
    {
      StoppedThread stopped(d.process().pid(), tid);
      REQUIRE(stopped.stopped());
      REQUIRE(eventually([&] { return (answer = health(d)).starts_with("503"); }, 20s));
      INFO(answer);
      CHECK_THAT(answer, Catch::StartsWith("503 unhealthy ") && Catch::Contains(reason));
    }
    REQUIRE(eventually([&] { return health(d) == "200"; }, 20s));
    // And it serves again: nothing was restarted.
    REQUIRE(eventually([&] { return fetch_ids(d, 5).size() == 5; }, 20s));
  };
  SECTION("the heartbeat thread") { sick_then_well("heartbeat", "heartbeat thread"); }
  SECTION("an HTTP event loop but the main one") {
    sick_then_well("http-1", "an HTTP event loop has not run for");
  }
  CHECK(d.process().running());
}
