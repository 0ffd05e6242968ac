#include "snowflake/state/sequence_run.hpp"

#include <fstream>

#include "snowflake/names.hpp"
#include "snowflake/state/durable_file.hpp"

namespace snowflake::state {

Result<std::optional<std::string>, std::string> swap_sequence_run(const std::string& dir,
                                                                  const std::string& run) {
  const std::string path = dir + "/sequence-run";
  std::optional<std::string> before;
  if (std::ifstream in(path); in) {
    std::string line;
    // Anything but a run's token (a torn or foreign file) names no run.
    if (std::getline(in, line) && is_valid_name(line)) before = line;
  }
  // Both sides are strings: said explicitly which is which.
  if (auto written = write_durably(dir, path, run + "\n"); !written) {
    return outcome::failure(written.error());
  }
  return outcome::success(before);
}

}  // namespace snowflake::state
