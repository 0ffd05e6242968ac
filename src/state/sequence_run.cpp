#include "snowflake/state/sequence_run.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "snowflake/base/names.hpp"
#include "snowflake/state/durable_file.hpp"
#include "snowflake/state/state_dir.hpp"

namespace snowflake::state {

using nlohmann::json;

std::optional<PreviousRun> decode_sequence_run(std::string_view text, std::string_view boot_now,
                                               std::string_view dir_now) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    // 0.4's file: the token alone, with nothing to prove where it was written.
    const std::string_view line = text.substr(0, text.find('\n'));
    if (!is_valid_name(line)) return std::nullopt;
    return PreviousRun{std::string(line), false,
                       "its file, written by snowflaked 0.4, says neither boot nor directory"};
  }
  const auto field = [&j](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  PreviousRun previous{field("run"), false, {}};
  if (!is_valid_name(previous.run)) return std::nullopt;
  const std::string boot = field("boot_id");
  const std::string dir = field("dir_id");
  previous.proven_over = written_here(boot, dir, boot_now, dir_now);
  if (previous.proven_over) return previous;
  if (boot_now.empty() || dir_now.empty()) {
    previous.why_not = "this machine's boot ID or the directory's identity cannot be read";
  } else if (boot != boot_now) {
    previous.why_not = "it was written in another boot (or on another machine)";
  } else {
    previous.why_not = "it was written into another directory: this one is a copy";
  }
  return previous;
}

Result<std::optional<PreviousRun>, std::string> swap_sequence_run(const std::string& dir,
                                                                  const std::string& run) {
  const std::string path = dir + "/sequence-run";
  const std::string boot_now = current_boot_id();
  const std::string dir_now = directory_identity(dir);
  std::optional<PreviousRun> before;
  if (std::ifstream in(path); in) {
    std::stringstream text;
    text << in.rdbuf();
    before = decode_sequence_run(text.str(), boot_now, dir_now);
  }
  const json written_json{{"run", run}, {"boot_id", boot_now}, {"dir_id", dir_now}};
  // Both sides are strings: said explicitly which is which.
  if (auto written = write_durably(dir, path, written_json.dump() + "\n"); !written) {
    return outcome::failure(written.error());
  }
  return outcome::success(std::move(before));
}

}  // namespace snowflake::state
