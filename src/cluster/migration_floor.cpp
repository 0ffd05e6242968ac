#include "snowflake/cluster/migration_floor.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/ids/text.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

using nlohmann::json;

MigrationFloor floor_above(const IdLayout& layout, std::uint64_t id) {
  // An ID's sign bit is never set: decompose() only refuses that.
  const auto decoded = layout.decompose(id & 0x7fff'ffff'ffff'ffffULL);
  return MigrationFloor{id, decoded.value().timestamp_ms};
}

std::optional<MigrationFloor> recorded_floor(std::string_view root_data) {
  const json j = json::parse(root_data, nullptr, false);
  if (!j.is_object() || !j.contains("floor") || !j.at("floor").is_object()) return std::nullopt;
  const json& f = j.at("floor");
  const auto ms = f.contains("ms") ? json_integer<std::int64_t>(f.at("ms")) : std::nullopt;
  const auto above = f.contains("above_id") && f.at("above_id").is_string()
                         ? parse_id(f.at("above_id").get<std::string>())
                         : std::nullopt;
  if (!ms || !above) return std::nullopt;
  return MigrationFloor{*above, *ms};
}

std::string with_floor(std::string_view root_data, const MigrationFloor& floor) {
  json j = json::parse(root_data, nullptr, false);
  if (!j.is_object()) j = json::object();
  j["floor"] = {{"above_id", std::to_string(floor.above_id)}, {"ms", floor.ms}};
  return j.dump();
}

Result<void, CoordError> confirm_floor(ZkSession& zk, const std::string& root,
                                       std::int64_t floor_ms, std::uint32_t worker_id) {
  BOOST_OUTCOME_TRY(zk.ensure_path(tree::floor_acks_dir(root)));
  const std::string path = tree::floor_ack(root, zk.session_id());
  const std::string data = json{{"floor_ms", floor_ms}, {"worker_id", worker_id}}.dump();
  auto created = zk.create(path, data, CreateMode::ephemeral);
  if (created) return outcome::success();
  if (created.error().code != ZkErrc::node_exists) return CoordError::from(created.error());
  // Ours (named by our session): only this session writes it.
  BOOST_OUTCOME_TRY(zk.set(path, data, -1));
  return outcome::success();
}

}  // namespace snowflake::coord
