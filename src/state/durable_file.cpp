#include "snowflake/state/durable_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "snowflake/base/error_text.hpp"

namespace snowflake::state {

namespace {

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<void, std::string> write_durably(const std::string& dir, const std::string& path,
                                        std::string_view text) {
  const std::string temp = path + ".tmp";
  {
    Fd out{::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
    if (out.fd < 0) return fmt::format("{}: cannot create: {}", temp, error_text(errno));
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(out.fd, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fmt::format("{}: cannot write: {}", temp, error_text(errno));
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(out.fd) != 0) return fmt::format("{}: fsync: {}", temp, error_text(errno));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fmt::format("{}: cannot rename to {}: {}", temp, path, error_text(errno));
  }
  // The rename is durable only once the directory is.
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0) return fmt::format("{}: fsync: {}", dir, error_text(errno));
  return outcome::success();
}

}  // namespace snowflake::state
