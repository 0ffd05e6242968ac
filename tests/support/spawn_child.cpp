#include "spawn_child.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace snowflake::test {

namespace {

// Opens `path` as file descriptor `fd` in the child; false on failure.
bool redirect(int fd, const char* path, int flags) {
  const int opened = ::open(path, flags, 0644);
  if (opened < 0) return false;
  if (opened == fd) return true;
  const bool ok = ::dup2(opened, fd) == fd;
  ::close(opened);
  return ok;
}

// Moves the (single-threaded) child into a new time namespace whose
// CLOCK_BOOTTIME is ahead by the offset `offsets` says ("boottime N 0"):
// unshare makes it for the children to come, setns enters it itself. In
// the forked child: system calls only.
bool enter_suspended_host(const std::string& offsets) {
  if (::unshare(CLONE_NEWTIME) != 0) return false;
  const int file = ::open("/proc/self/timens_offsets", O_WRONLY);
  if (file < 0) return false;
  const bool written =
      ::write(file, offsets.data(), offsets.size()) == static_cast<ssize_t>(offsets.size());
  ::close(file);
  if (!written) return false;
  const int ns = ::open("/proc/self/ns/time_for_children", O_RDONLY);
  if (ns < 0) return false;
  const bool entered = ::setns(ns, CLONE_NEWTIME) == 0;
  ::close(ns);
  return entered;
}

// Runs in the forked child: async-signal-safe calls only until exec, since
// the parent has other threads. Never returns.
[[noreturn]] void become(const SpawnRequest& r, const std::string& time_offsets, char* const* argv,
                         char* const* envp, pid_t parent, int error_pipe) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // whatever the forking thread blocked
  if ((time_offsets.empty() || enter_suspended_host(time_offsets)) &&
      redirect(0, "/dev/null", O_RDONLY) &&
      redirect(1, r.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC) &&
      redirect(2, r.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC)) {
    ::execve(argv[0], argv, envp);
  }
  const int error = errno;
  (void)!::write(error_pipe, &error, sizeof error);
  ::_exit(127);
}

pid_t fork_and_exec(const SpawnRequest& r) {
  // Built before the fork: the child may not allocate.
  std::vector<std::string> args(r.argv);
  std::vector<std::string> env(r.env);
  std::vector<char*> argv;
  std::vector<char*> envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const std::string time_offsets =
      r.suspended_for_s > 0 ? "boottime " + std::to_string(r.suspended_for_s) + " 0" : "";
  // The child reports a failed exec through this pipe; a successful exec
  // closes it (O_CLOEXEC) with nothing written.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2: " + std::string(std::strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) become(r, time_offsets, argv.data(), envp.data(), parent, fds[1]);
  const int fork_error = errno;
  ::close(fds[1]);
  int child_error = 0;
  ssize_t n = 0;
  if (pid > 0) {
    do n = ::read(fds[0], &child_error, sizeof child_error);
    while (n < 0 && errno == EINTR);
  }
  ::close(fds[0]);
  if (pid < 0) throw std::runtime_error("fork for " + r.argv[0] + ": " + std::strerror(fork_error));
  if (n == sizeof child_error) {
    // The child has exited (127) or is about to; no ChildProcess will wait
    // for it, so it is reaped here.
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("cannot start " + r.argv[0] + ": " + std::strerror(child_error));
  }
  return pid;
}

// The thread every child is forked by; it lives as long as the process. A
// process forked from this one (a test that forks) gets a thread of its own.
class SpawnThread {
 public:
  static SpawnThread& instance() {
    static std::mutex creating;
    static SpawnThread* current = nullptr;  // deliberately never destroyed
    std::lock_guard lock(creating);
    if (current == nullptr || current->owner_ != ::getpid()) {
      current =
          new SpawnThread;  // NOLINT(cppcoreguidelines-owning-memory): lives as long as the process
      std::thread([t = current] { t->run(); }).detach();
    }
    return *current;
  }

  pid_t spawn(const SpawnRequest& r) {
    std::packaged_task<pid_t()> job([&r] { return fork_and_exec(r); });
    auto result = job.get_future();
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
    return result.get();
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<pid_t()> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const pid_t owner_ = ::getpid();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<pid_t()>> jobs_;
};

}  // namespace

pid_t spawn_child(const SpawnRequest& request) { return SpawnThread::instance().spawn(request); }

}  // namespace snowflake::test
