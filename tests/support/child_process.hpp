#pragma once
// Runs a real program for a test: its stdout and stderr go to files (no pipe
// can fill up and block it), waits have deadlines, and the destructor kills
// only the process it started, by pid. It dies with the test process too,
// however that ends (spawn_child.hpp).

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace snowflake::test {

struct ExitStatus {
  int code = -1;   // exit code, or -1 if killed by a signal
  int signal = 0;  // the signal that ended it, or 0
};

// The report a sanitizer wrote into a process's stderr (from its first line
// on), if any: ThreadSanitizer, AddressSanitizer, LeakSanitizer, UBSan.
std::optional<std::string> sanitizer_report(const std::string& stderr_text);

// An entry of a ChildProcess's `env` under this name is not passed on: the
// child runs as on a host that was suspended for that many seconds (its
// CLOCK_BOOTTIME that far ahead of CLOCK_MONOTONIC; root only, as CI runs).
inline constexpr char kSuspendedForEnv[] = "SNOWFLAKE_TEST_SUSPENDED_FOR_S";

// The destructor fails the test (abort) when the child's stderr holds a
// sanitizer report.
class ChildProcess {
 public:
  // `env` entries are added to (or replace those of) the test's environment.
  // Output goes to a temp dir removed with this object, or, if `output_dir`
  // is given, into it (created if missing) as stdout and stderr, and kept.
  ChildProcess(std::vector<std::string> argv, std::map<std::string, std::string> env = {},
               std::filesystem::path output_dir = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Signals the child if it has not been reaped yet; after that, nothing.
  void send_signal(int signal);
  // Whether its main thread blocks `signal` now (SigBlk in /proc/<pid>/status;
  // false once it has exited): snowflaked blocks SIGTERM as its first step.
  bool blocks_signal(int signal);
  // The exit status, or nullopt if still running at the deadline.
  std::optional<ExitStatus> wait_for_exit(std::chrono::milliseconds timeout);
  bool running();

  std::string stdout_text() const;
  std::string stderr_text() const;
  // Polls stderr until it contains `text`; false at the deadline.
  bool wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  std::filesystem::path dir_;
  bool keep_output_ = false;
};

// Runs to completion; a process still running after `timeout` is killed and
// reported with signal SIGKILL.
struct RunResult {
  ExitStatus status;
  std::string out;
  std::string err;
};
RunResult run_process(std::vector<std::string> argv,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to a file in the directory and returns its path.
  std::filesystem::path write(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

// A copy of a directory and all it holds, as `cp -a` (or a restored volume
// snapshot, or a cloned machine image) would make it.
void copy_directory(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace snowflake::test
