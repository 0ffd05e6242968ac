// snowflaked cluster export --config FILE, and cluster import FILE --config
// FILE: what a cluster's definitions are, kept outside ZooKeeper, and made
// again from that file after ZooKeeper lost them.
//
// The file (JSON) holds what no daemon can tell again by itself: every
// sequence's node as ZooKeeper had it (its definition: step, template,
// --max, period and zone, order; and its next number and floor then), the
// cluster's form policy and its migration floor:
//
//   {"format": "snowflaked-cluster-export/1", "exported_at": "...",
//    "root": "/snowflake/orders", "cluster_id": "...",
//    "forms": {...} | null, "floor": {"above_id": "N", "ms": M} | null,
//    "sequences": {"invoice": {<the node>}, "invoice@2026-12-02": {...}}}
//
// Import makes each sequence ZooKeeper lacks again, frozen (nothing of it
// is handed out until `seq raise` lifts it past your data: numbers went
// out after the export that no file knows), with its definition; records
// the form policy where the root has another or none; and says, as the
// commands to run, what it leaves to the operator: a sequence the root has
// otherwise (made strict, retired or raised since the copy ZooKeeper came
// back with), a migration floor lower than the file's. It never lowers or
// thaws anything.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "snowflake/coord/cluster_identity.hpp"
#include "snowflake/coord/form_policy.hpp"
#include "snowflake/coord/migration_floor.hpp"
#include "snowflake/coord/sequence_node.hpp"
#include "snowflake/coord/sequence_ranges.hpp"
#include "snowflake/time_format.hpp"

namespace snowflake::commands {

namespace {

constexpr std::string_view kFormat = "snowflaked-cluster-export/1";

// How long a command waits for ZooKeeper's answers: its connect timeout.
BootClock::time_point answer_deadline(const Config& config) {
  return BootClock::now() + config.zookeeper.connect_timeout;
}

// The root's data, or why not (exit 1).
std::optional<std::string> root_data(coord::ZkSession& zk, const Config& config,
                                     BootClock::time_point deadline) {
  auto node = until_answered(deadline, [&] { return zk.try_get(config.zookeeper.root); });
  if (!node) {
    fail(kExitFailure, "cannot read the root: " + node.error().message());
    return std::nullopt;
  }
  if (!node.value()) {
    fail(kExitFailure,
         fmt::format("{} does not exist: after ZooKeeper lost it, `snowflaked cluster fence` "
                     "makes it again first",
                     config.zookeeper.root));
    return std::nullopt;
  }
  return node.value()->data;
}

nlohmann::json forms_of(std::string_view data) {
  const auto root = nlohmann::json::parse(data, nullptr, false);
  if (!root.is_object() || !root.contains("forms")) return nullptr;
  return root["forms"];
}

// A sequence the root has, set beside the file's: the commands that would
// bring it to the file's, none when nothing is behind.
std::vector<std::string> behind(const std::string& tag, const coord::SequenceNode& here,
                                const coord::SequenceNode& file, const std::string& config_file) {
  std::vector<std::string> todo;
  const std::int64_t file_floor = std::max(file.floor, file.next - 1);
  if (here.next - 1 < file_floor && here.floor < file_floor) {
    todo.push_back(fmt::format(
        "snowflaked seq raise {} --above {} --config {}   # ZooKeeper's copy is behind the "
        "export (numbers up to {} went out); above your data if that is higher",
        tag, file_floor, config_file, file_floor));
  }
  if (file.strict && !here.strict) {
    todo.push_back(fmt::format(
        "snowflaked seq order {} strict --config {}   # strict in the export", tag, config_file));
  }
  if (file.number_template != here.number_template || file.end != here.end ||
      file.reset != here.reset || file.time_zone != here.time_zone) {
    todo.push_back(fmt::format(
        "# {}: made otherwise here (template, --max or period) than in the export: a definition "
        "is fixed when made; make a new tag if the export's is the one you want",
        tag));
  }
  return todo;
}

// The root's form policy made `policy` (a conditional write on the root as
// read, read again after a race or a lost answer); why not, if it was not.
std::optional<std::string> record_forms(coord::ZkSession& zk, const std::string& root,
                                        const FormPolicy& policy, BootClock::time_point deadline) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto node = until_answered(deadline, [&] { return zk.get(root); });
    if (!node) return node.error().message();
    const auto recorded = coord::recorded_form_policy(node.value().data);
    if (recorded && recorded.value() == policy) return std::nullopt;
    auto written =
        zk.set(root, coord::with_form_policy(node.value().data, policy), node.value().stat.version);
    if (written) return std::nullopt;
    if (written.error().code != coord::ZkErrc::bad_version && !written.error().outcome_unknown())
      return written.error().message();
  }
  return fmt::format("{} kept changing while it was written", root);
}

}  // namespace

int cluster_export(const std::string& config_file) {
  const auto config = load_config(config_file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto deadline = answer_deadline(*config);
  const std::string& root = config->zookeeper.root;
  const auto data = root_data(*zk, *config, deadline);
  if (!data) return kExitFailure;
  auto tags = until_answered(deadline, [&] { return coord::sequence_tags(*zk, root); });
  if (!tags) return fail(kExitFailure, "cannot list the sequences: " + tags.error().message);
  nlohmann::ordered_json sequences = nlohmann::ordered_json::object();
  for (const auto& tag : tags.value()) {
    auto read = until_answered(deadline, [&] { return coord::read_sequence(*zk, root, tag); });
    if (!read) {
      if (read.error().code == coord::CoordErrc::no_sequence) continue;  // deleted meanwhile
      return fail(kExitFailure,
                  fmt::format("cannot read sequence \"{}\": {}", tag, read.error().message));
    }
    sequences[tag] = nlohmann::ordered_json::parse(coord::encode(read.value().node));
  }
  const auto floor = coord::recorded_floor(*data);
  nlohmann::ordered_json out{
      {"format", kFormat},
      {"exported_at", format_iso8601_ms(SystemClock::instance().wall_ms())},
      {"root", root},
      {"cluster_id", coord::recorded_cluster_id(*data).value_or("")},
      {"forms", forms_of(*data)},
      {"floor", floor ? nlohmann::ordered_json{{"above_id", std::to_string(floor->above_id)},
                                               {"ms", floor->ms}}
                      : nlohmann::ordered_json()},
      {"sequences", std::move(sequences)}};
  std::cout << out.dump(2) << "\n";
  return kExitOk;
}

namespace {

// An export file, read and checked: its sequences decoded.
struct ExportFile {
  nlohmann::json json;
  std::map<std::string, coord::SequenceNode> sequences;
};

Result<ExportFile, std::string> read_export(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fmt::format("cannot open \"{}\"", path);
  std::stringstream text;
  text << in.rdbuf();
  ExportFile file{nlohmann::json::parse(text.str(), nullptr, false), {}};
  const auto& j = file.json;
  if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("sequences") ||
      !j["sequences"].is_object()) {
    return fmt::format("\"{}\" is not a file of snowflaked cluster export ({})", path, kFormat);
  }
  for (const auto& [tag, node] : j["sequences"].items()) {
    auto decoded = coord::decode_sequence(node.dump());
    if (!decoded) return fmt::format("\"{}\": sequence \"{}\" is not a sequence's node", path, tag);
    file.sequences.emplace(tag, std::move(*decoded));
  }
  if (j.contains("forms") && !j["forms"].is_null()) {
    auto forms = coord::recorded_form_policy(nlohmann::json{{"forms", j["forms"]}}.dump());
    if (!forms || !forms.value()) return fmt::format("\"{}\": its forms are not a policy", path);
  }
  return file;
}

// One sequence of the export: made again frozen where ZooKeeper lacks it
// (true), else set beside it (what differs added to `todo`). An error:
// why it could not be read or made.
Result<bool, std::string> import_sequence(coord::ZkSession& zk, const std::string& root,
                                          const std::string& tag, coord::SequenceNode node,
                                          const std::string& config_file,
                                          BootClock::time_point deadline,
                                          std::vector<std::string>& todo) {
  auto read = until_answered(deadline, [&] { return coord::read_sequence(zk, root, tag); });
  if (read) {
    const auto more = behind(tag, read.value().node, node, config_file);
    todo.insert(todo.end(), more.begin(), more.end());
    return false;
  }
  if (read.error().code != coord::CoordErrc::no_sequence) {
    return fmt::format("cannot read sequence \"{}\": {}", tag, read.error().message);
  }
  // Numbers past the export went out too, which nobody knows: frozen until
  // raised past your data; its floor and next as the export had them, so
  // that a raise below them is refused as ever.
  node.takes.clear();
  node.frozen = true;
  auto created =
      until_answered(deadline, [&] { return coord::create_sequence(zk, root, tag, node); });
  if (!created && created.error().code != coord::CoordErrc::sequence_exists) {
    return fmt::format("cannot make sequence \"{}\" again: {}", tag, created.error().message);
  }
  std::cout << fmt::format(
      "made again, frozen: \"{}\" (next {} in the export{}{}); seq raise {} --above N, N the "
      "highest of it in your data, thaws it\n",
      tag, node.next, node.strict ? ", strict" : "",
      node.reset == PeriodReset::none ? "" : fmt::format(", each {}", to_string(node.reset)), tag);
  return true;
}

// The export's form policy recorded where the root has another or none,
// and its migration floor said where the root's is lower.
void import_policy(coord::ZkSession& zk, const std::string& root, const std::string& data,
                   const nlohmann::json& file, const std::string& config_file,
                   BootClock::time_point deadline, std::vector<std::string>& todo) {
  if (file.contains("forms") && !file["forms"].is_null()) {
    const auto mine =
        coord::recorded_form_policy(nlohmann::json{{"forms", file["forms"]}}.dump()).value();
    const auto here = coord::recorded_form_policy(data);
    if (!here || here.value() != mine) {
      if (auto why = record_forms(zk, root, *mine, deadline)) {
        todo.push_back(fmt::format(
            "snowflaked cluster forms --set --config FILE   # with the export's forms ({}): not "
            "recorded ({})",
            describe(*mine), *why));
      } else {
        std::cout << fmt::format("the cluster's form policy recorded again: {}\n", describe(*mine));
      }
    }
  }
  if (file.contains("floor") && file["floor"].is_object()) {
    const auto here = coord::recorded_floor(data);
    const auto ms = file["floor"].value("ms", std::int64_t{0});
    if (!here || here->ms < ms) {
      todo.push_back(fmt::format(
          "snowflaked pool floor --above-id {} --config {}   # the export's migration floor",
          file["floor"].value("above_id", "?"), config_file));
    }
  }
}

}  // namespace

int cluster_import(const std::string& config_file, const std::string& export_file) {
  const auto config = load_config(config_file);
  if (!config) return kExitUsage;
  auto file = read_export(export_file);
  if (!file) return fail(kExitUsage, file.error());
  const auto& json = file.value().json;
  if (json.value("root", "") != config->zookeeper.root) {
    std::cerr << fmt::format("warning: the export is of {}, this config's root is {}\n",
                             json.value("root", "?"), config->zookeeper.root);
  }
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto deadline = answer_deadline(*config);
  const std::string& root = config->zookeeper.root;
  const auto data = root_data(*zk, *config, deadline);
  if (!data) return kExitFailure;
  std::vector<std::string> todo;
  std::size_t made = 0;
  for (const auto& entry : file.value().sequences) {
    auto one = import_sequence(*zk, root, entry.first, entry.second, config_file, deadline, todo);
    if (!one) return fail(kExitFailure, one.error());
    if (one.value()) ++made;
  }
  import_policy(*zk, root, *data, json, config_file, deadline, todo);
  std::cout << fmt::format("{} sequence(s) made again, {} already there\n", made,
                           file.value().sequences.size() - made);
  if (!todo.empty()) {
    std::cout << "to do, as the export says:\n";
    for (const auto& line : todo) std::cout << "  " << line << "\n";
  }
  return kExitOk;
}

}  // namespace snowflake::commands
