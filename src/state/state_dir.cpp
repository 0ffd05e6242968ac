#include "snowflake/state/state_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "snowflake/base/error_text.hpp"

namespace snowflake::state {

namespace {

// The pid a holder wrote into the lock file; "unknown" if it has not yet.
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string directory_identity(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return {};
  return fmt::format("{}:{}", st.st_dev, st.st_ino);
}

bool written_here(std::string_view boot_id, std::string_view dir_id, std::string_view boot_now,
                  std::string_view dir_now) noexcept {
  return !boot_now.empty() && !dir_now.empty() && boot_id == boot_now && dir_id == dir_now;
}

Result<std::unique_ptr<StateDir>, std::string> StateDir::open(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec)) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  if (ec)
    return fmt::format("coordinator.state_dir \"{}\": cannot create it: {}", dir, ec.message());
  if (::access(dir.c_str(), W_OK) != 0) {
    return fmt::format("coordinator.state_dir \"{}\" is not a writable directory: {}", dir,
                       error_text(errno));
  }
  const std::string lock_path = dir + "/lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return fmt::format("{}: cannot open: {}", lock_path, error_text(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string pid = holder_pid(fd);
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return fmt::format(
          "coordinator.state_dir \"{}\" is in use by another snowflaked (pid {}); "
          "every daemon needs a state directory of its own",
          dir, pid);
    }
    return fmt::format("{}: cannot lock: {}", lock_path, error_text(error));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // Only the message of a second daemon loses its pid; the lock holds.
  }
  std::string dir_id = directory_identity(dir);
  if (dir_id.empty()) {
    const int error = errno;
    ::close(fd);
    return fmt::format("coordinator.state_dir \"{}\": {}", dir, error_text(error));
  }
  std::unique_ptr<StateDir> opened(new StateDir(dir, fd, current_boot_id(), std::move(dir_id)));
  auto loaded = opened->file_.load();
  if (!loaded) return loaded.error();
  opened->previous_ = std::move(loaded).value();
  return opened;
}

StateDir::StateDir(std::string dir, int lock_fd, std::string boot_id, std::string dir_id)
    : dir_(std::move(dir)),
      lock_fd_(lock_fd),
      boot_id_(std::move(boot_id)),
      dir_id_(std::move(dir_id)),
      file_(dir_) {}

StateDir::~StateDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

Result<void, std::string> StateDir::save(StateRecord record) const {
  record.boot_id = boot_id_;
  record.dir_id = dir_id_;
  return file_.save(record);
}

bool StateDir::proves_writer_dead(const StateRecord& record) const {
  return written_here(record.boot_id, record.dir_id, boot_id_, dir_id_);
}

}  // namespace snowflake::state
