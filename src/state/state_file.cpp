#include "snowflake/state/state_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "snowflake/base/error_text.hpp"
#include "snowflake/base/json_integer.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/state/durable_file.hpp"

namespace snowflake::state {

namespace {

using nlohmann::json;

// boot_id and dir_id were added as optional keys within format 1, so that
// 0.1.0, which reads format 1 and ignores keys it does not know, can still
// read the file after a rollback. A file without them proves nothing.
constexpr int kFormatVersion = 1;

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
  return write_durably(dir_, path_, encode_state(r));
}

}  // namespace snowflake::state
