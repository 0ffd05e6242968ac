#include "child_process.hpp"

#include "spawn_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace snowflake::test {

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ExitStatus decode_status(int status) {
  if (WIFEXITED(status)) return {WEXITSTATUS(status), 0};
  return {-1, WIFSIGNALED(status) ? WTERMSIG(status) : 0};
}

std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "snowflake-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, std::map<std::string, std::string> env,
                           std::filesystem::path output_dir)
    : dir_(output_dir.empty() ? make_temp_dir() : output_dir), keep_output_(!output_dir.empty()) {
  if (keep_output_) std::filesystem::create_directories(dir_);
  // Environment: the test's own, with `env` laid over it.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  // The library's own leaks (tests/lsan.supp: a multi cut by a lost
  // connection, which a loaded machine makes in any test) are not ours.
  // Never the host's state directory (/var/lib/snowflaked, where a config
  // names no coordinator.state_dir): one that cannot exist, even for root
  // (tests/support/host_state.py says why).
  merged.try_emplace("STATE_DIRECTORY", "/proc/snowflake-tests-name-coordinator.state_dir");
  merged.try_emplace("LSAN_OPTIONS",
                     "suppressions=" SNOWFLAKE_SOURCE_DIR "/tests/lsan.supp:print_suppressions=0");
  for (auto& [k, v] : env) merged[k] = v;
  long suspended_for_s = 0;
  if (const auto it = merged.find(kSuspendedForEnv); it != merged.end()) {
    suspended_for_s = std::stol(it->second);
    merged.erase(it);
  }
  SpawnRequest request{.argv = std::move(argv),
                       .env = {},
                       .stdout_path = (dir_ / "stdout").string(),
                       .stderr_path = (dir_ / "stderr").string(),
                       .suspended_for_s = suspended_for_s};
  for (auto& [k, v] : merged) request.env.push_back(k + "=" + v);
  pid_ = spawn_child(request);
}

std::optional<std::string> sanitizer_report(const std::string& stderr_text) {
  for (const char* report : {"WARNING: ThreadSanitizer", "ERROR: AddressSanitizer",
                             "ERROR: LeakSanitizer", "runtime error: "}) {
    if (const auto at = stderr_text.find(report); at != std::string::npos) {
      // From the start of its line: UBSan's names the file first.
      const auto line = stderr_text.rfind('\n', at);
      return stderr_text.substr(line == std::string::npos ? 0 : line + 1);
    }
  }
  return std::nullopt;
}

ChildProcess::~ChildProcess() {
  // A sanitizer report in a child (our daemon is built with the tests'
  // sanitizer) fails the test that started it, even when the test already
  // got every answer it asked for: each test runs in a process of its own.
  if (const auto report = sanitizer_report(stderr_text())) {
    std::fprintf(stderr, "a sanitizer report in a child process (%s):\n%s\n", dir_.c_str(),
                 report->c_str());
    std::abort();
  }
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  std::error_code ec;
  if (!keep_output_) std::filesystem::remove_all(dir_, ec);
}

void ChildProcess::send_signal(int signal) {
  // Never to a child already reaped: its pid may belong to another process
  // by now (pid_max is 32768 here, and a long chaos run wraps it), or to a
  // thread of one, and kill() of a thread's ID signals its whole process.
  // Until we reap it an exited child keeps its pid, so a kill right after
  // this check reaches it or its zombie, nobody else.
  if (pid_ > 0 && running()) ::kill(pid_, signal);
}

bool ChildProcess::blocks_signal(int signal) {
  if (pid_ <= 0 || !running()) return false;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigBlk:", 0) == 0) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (signal - 1)) & 1ULL;
    }
  }
  return false;
}

bool ChildProcess::running() {
  if (status_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = decode_status(status);
    return false;
  }
  return true;
}

std::optional<ExitStatus> ChildProcess::wait_for_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

std::string ChildProcess::stdout_text() const { return read_file(dir_ / "stdout"); }
std::string ChildProcess::stderr_text() const { return read_file(dir_ / "stderr"); }

bool ChildProcess::wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (stderr_text().find(text) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

RunResult run_process(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  ChildProcess child(std::move(argv));
  auto status = child.wait_for_exit(timeout);
  if (!status) {
    child.send_signal(SIGKILL);
    status = child.wait_for_exit(std::chrono::seconds(5));
  }
  return {status.value_or(ExitStatus{-1, SIGKILL}), child.stdout_text(), child.stderr_text()};
}

TempDir::TempDir() : path_(make_temp_dir()) {}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& content) const {
  const auto file = path_ / name;
  std::ofstream(file) << content;
  return file;
}

void copy_directory(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    const auto target = to / entry.path().filename();
    std::error_code ec;
    if (entry.is_directory(ec)) {
      copy_directory(entry.path(), target);
      continue;
    }
    fs::copy(entry.path(), target, fs::copy_options::none, ec);
    // The directory may belong to a running daemon: a file it renamed away
    // between the listing and the copy (the state file's .tmp) is simply not
    // in the copy, as in a snapshot taken a moment later. Anything else fails.
    if (ec && ec != std::errc::no_such_file_or_directory) {
      throw fs::filesystem_error("cannot copy", entry.path(), target, ec);
    }
  }
}

}  // namespace snowflake::test
