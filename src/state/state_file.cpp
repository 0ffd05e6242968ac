#include "snowflake/state/state_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "../error_text.hpp"
#include "../json_integer.hpp"
#include "snowflake/layout_json.hpp"

namespace snowflake::state {

namespace {

using nlohmann::json;

// boot_id and dir_id were added as optional keys within format 1, so that
// 0.1.0, which reads format 1 and ignores keys it does not know, can still
// read the file after a rollback. A file without them proves nothing.
constexpr int kFormatVersion = 1;

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

StateFile::StateFile(std::string dir) : dir_(std::move(dir)), path_(dir_ + "/worker.json") {}

std::optional<StateRecord> decode_state(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  // Integers must fit their fields: a cast of 1e300 is undefined behaviour.
  try {
    if (!j.is_object() || json_integer_at<int>(j, "format") != kFormatVersion) return std::nullopt;
    StateRecord r;
    const auto strategy = parse_coordinator_type(j.at("strategy").get<std::string>());
    if (!strategy) return std::nullopt;
    r.strategy = *strategy;
    r.root = j.at("root").get<std::string>();
    r.worker_id = json_integer_at<std::uint32_t>(j, "worker_id");
    r.node = j.at("node").get<std::string>();
    if (const auto& o = j.at("owner"); !o.is_null()) {
      r.owner = o.get<OwnerToken>();
    }
    const auto layout = decode_layout(j.at("layout").dump());
    if (!layout) return std::nullopt;
    r.layout = *layout;
    r.hwm = json_integer_at<std::int64_t>(j, "hwm");
    r.reserved_until = json_integer_at<std::int64_t>(j, "reserved_until");
    r.boot_id = j.value("boot_id", std::string());
    r.dir_id = j.value("dir_id", std::string());
    return r;
  } catch (const std::exception&) {  // a key missing, of another type, or out of range
    return std::nullopt;
  }
}

std::string encode_state(const StateRecord& r) {
  const json owner = r.owner ? json(*r.owner) : json(nullptr);
  return json{{"format", kFormatVersion},
              {"strategy", to_string(r.strategy)},
              {"root", r.root},
              {"worker_id", r.worker_id},
              {"node", r.node},
              {"owner", owner},
              {"layout", json::parse(encode_layout(r.layout))},
              {"hwm", r.hwm},
              {"reserved_until", r.reserved_until},
              {"boot_id", r.boot_id},
              {"dir_id", r.dir_id}}
             .dump() +
         "\n";
}

Result<std::optional<StateRecord>, std::string> StateFile::load() const {
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return std::optional<StateRecord>();
    return fmt::format("{}: cannot open: {}", path_, error_text(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (auto record = decode_state(text.str())) return std::optional<StateRecord>(std::move(record));
  return fmt::format("{}: not a snowflaked state file (format {}); move it away to start afresh",
                     path_, kFormatVersion);
}

Result<void, std::string> StateFile::save(const StateRecord& r) const {
  const std::string text = encode_state(r);
  const std::string temp = path_ + ".tmp";
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
  if (::rename(temp.c_str(), path_.c_str()) != 0) {
    return fmt::format("{}: cannot rename to {}: {}", temp, path_, error_text(errno));
  }
  // The rename is durable only once the directory is.
  Fd dir{::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0 || ::fsync(dir.fd) != 0)
    return fmt::format("{}: fsync: {}", dir_, error_text(errno));
  return outcome::success();
}

}  // namespace snowflake::state
