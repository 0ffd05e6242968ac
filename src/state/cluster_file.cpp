#include "snowflake/state/cluster_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "snowflake/state/durable_file.hpp"

namespace snowflake::state {

namespace {

std::string path_in(const std::string& dir) { return dir + "/cluster.json"; }

// Not a cluster ID's shape (coord::is_cluster_id writes them): a file someone edited.
bool plausible_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 &&
         id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::optional<ClusterRecord> decode_cluster_record(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  const auto r = j.find("root");
  const auto id = j.find("cluster_id");
  if (r == j.end() || id == j.end() || !r->is_string() || !id->is_string()) return std::nullopt;
  ClusterRecord record{r->get<std::string>(), id->get<std::string>()};
  if (!plausible_id(record.cluster_id)) return std::nullopt;
  return record;
}

std::string encode_cluster_record(const ClusterRecord& record) {
  return nlohmann::json{{"root", record.root}, {"cluster_id", record.cluster_id}}.dump() + "\n";
}

std::optional<ClusterRecord> load_cluster_record(const std::string& dir) {
  std::ifstream in(path_in(dir));
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return decode_cluster_record(text.str());
}

std::optional<std::string> load_cluster_id(const std::string& dir, const std::string& root) {
  auto record = load_cluster_record(dir);
  if (!record || record->root != root) return std::nullopt;
  return std::move(record->cluster_id);
}

Result<void, std::string> save_cluster_id(const std::string& dir, const std::string& root,
                                          const std::string& cluster_id) {
  return write_durably(dir, path_in(dir), encode_cluster_record({root, cluster_id}));
}

}  // namespace snowflake::state
