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
// Import, on the root of the export's cluster only (its path and ID), makes
// each sequence ZooKeeper lacks again, frozen (nothing of it is handed out
// until `seq raise` lifts it past your data: numbers went out after the
// export that no file knows), with its definition; freezes each it has
// behind the export (a restore older than the export), above the export's
// numbers; records the form policy where the root has none and the
// migration floor where the root's is lower (the cluster is fenced after a
// loss: every daemon reads the root again before it issues); and says, as
// the commands to run, what it leaves to the operator: each raise, a tag
// made strict since, a form policy that differs. It never lowers or thaws
// anything.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"

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

// The root's form policy as JSON; null when it records none, or none that
// reads as a policy (an import would refuse it: said on stderr).
nlohmann::json forms_of(std::string_view data) {
  const auto root = nlohmann::json::parse(data, nullptr, false);
  if (!root.is_object() || !root.contains("forms")) return nullptr;
  if (auto policy = coord::recorded_form_policy(data); !policy || !policy.value()) {
    std::cerr << "warning: the root's forms are not a policy: not exported\n";
    return nullptr;
  }
  return root["forms"];
}

// The highest number of a sequence the export knows went out.
std::int64_t exported_floor(const coord::SequenceNode& n) { return std::max(n.floor, n.next - 1); }

// How to thaw a sequence made again or frozen by the import: a plain one
// at once; one that restarts each period, each period first (the export's
// and the ones `seq list` shows), its definition last, never the other way
// round (a thawed definition makes a missing period from its start).
std::string how_to_thaw(const std::string& tag, const coord::SequenceNode& node,
                        const std::vector<std::string>& periods, const std::string& config_file) {
  if (node.reset == PeriodReset::none) {
    return fmt::format(
        "snowflaked seq raise {} --above N --config {}   # N >= {} and >= the "
        "highest {} in your data",
        tag, config_file, exported_floor(node), tag);
  }
  std::string out;
  for (const auto& p : periods) {
    out += fmt::format(
        "snowflaked seq raise {} --above N --config {}   # N >= the highest of it "
        "in your data\n  ",
        p, config_file);
  }
  out += fmt::format(
      "snowflaked seq raise {}@PERIOD --above N --config {}   # each other period seq list shows "
      "or your data has (today's, tomorrow's)\n  snowflaked seq raise {} --above 0 --config {}   "
      "# last: the definition thawed",
      tag, config_file, tag, config_file);
  return out;
}

// A sequence the root has, set beside the file's: frozen above the export's
// numbers when ZooKeeper's copy is behind them (a restore older than the
// export), and what else differs, as commands or notes.
Result<void, coord::CoordError> behind(coord::ZkSession& zk, const std::string& root,
                                       const std::string& tag, const coord::SequenceNode& here,
                                       const coord::SequenceNode& file,
                                       const std::vector<std::string>& periods,
                                       const std::string& config_file,
                                       BootClock::time_point deadline,
                                       std::vector<std::string>& todo) {
  const std::int64_t file_floor = exported_floor(file);
  if (exported_floor(here) < file_floor) {
    auto frozen = until_answered(
        deadline, [&] { return coord::freeze_sequence_above(zk, root, tag, file_floor, here); });
    if (!frozen) return frozen.error();
    std::cout << fmt::format(
        "frozen: \"{}\" (ZooKeeper had it behind the export: numbers up to {} went out)\n", tag,
        file_floor);
    todo.push_back(how_to_thaw(tag, file, periods, config_file));
  }
  if (file.strict && !here.strict) {
    todo.push_back(fmt::format(
        "snowflaked seq order {} strict --config {}   # strict in the export: once it is thawed, "
        "before clients use it",
        tag, config_file));
  }
  if (file.number_template != here.number_template || file.end != here.end ||
      file.reset != here.reset || file.time_zone != here.time_zone) {
    todo.push_back(fmt::format(
        "# {}: made otherwise here (template, --max or period) than in the export: a definition "
        "is fixed when made; make a new tag if the export's is the one you want",
        tag));
  }
  return outcome::success();
}

// The root's data changed by `change` (nullopt: nothing to change), in a
// conditional write on the root as read, read again after a race or a lost
// answer; why not, if it was not written.
template <class Change>
std::optional<std::string> change_root(coord::ZkSession& zk, const std::string& root,
                                       BootClock::time_point deadline, Change change) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto node = until_answered(deadline, [&] { return zk.get(root); });
    if (!node) return node.error().message();
    const std::optional<std::string> changed = change(node.value().data);
    if (!changed) return std::nullopt;
    auto written = zk.set(root, *changed, node.value().stat.version);
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
      // Not a sequence's data (a newer version's node): left out, said, so
      // that a daily export does not stop for one node.
      if (read.error().code == coord::CoordErrc::unusable) {
        std::cerr << fmt::format("warning: sequence \"{}\" left out: {}\n", tag,
                                 read.error().message);
        continue;
      }
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

// An export file, read and checked.
struct ExportFile {
  std::string root;
  std::string cluster_id;
  std::optional<FormPolicy> forms;
  std::optional<coord::MigrationFloor> floor;
  std::map<std::string, coord::SequenceNode> sequences;
  // The period nodes of each periodic tag: "TAG@KEY", by TAG.
  std::map<std::string, std::vector<std::string>> periods;
};

bool tag_name_ok(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name.front() != '@' &&
         name.back() != '@' && std::count(name.begin(), name.end(), '@') <= 1;
}

Result<ExportFile, std::string> read_export(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fmt::format("cannot open \"{}\"", path);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  const auto not_export = [&](std::string_view why) {
    return fmt::format("\"{}\" is not a file of snowflaked cluster export ({}): {}", path, kFormat,
                       why);
  };
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat) {
    return not_export("no \"format\"");
  }
  if (!j.contains("root") || !j["root"].is_string() || !j.contains("cluster_id") ||
      !j["cluster_id"].is_string()) {
    return not_export("\"root\" and \"cluster_id\" must be strings");
  }
  if (!j.contains("sequences") || !j["sequences"].is_object()) {
    return not_export("\"sequences\" must be an object");
  }
  ExportFile file{j["root"].get<std::string>(), j["cluster_id"].get<std::string>(), {}, {}, {}, {}};
  if (j.contains("forms") && !j["forms"].is_null()) {
    auto forms = coord::recorded_form_policy(nlohmann::json{{"forms", j["forms"]}}.dump());
    if (!forms || !forms.value()) return not_export("its forms are not a policy");
    file.forms = *forms.value();
  }
  if (j.contains("floor") && !j["floor"].is_null()) {
    const auto& f = j["floor"];
    if (!f.is_object() || !f.contains("above_id") || !f["above_id"].is_string() ||
        !f.contains("ms") || !f["ms"].is_number_integer()) {
      return not_export("\"floor\" must be {\"above_id\": \"N\", \"ms\": M}");
    }
    std::uint64_t above = 0;
    const auto& id = f["above_id"].get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), above);
    if (ec != std::errc() || end != id.data() + id.size()) return not_export("floor.above_id");
    file.floor = coord::MigrationFloor{above, f["ms"].get<std::int64_t>()};
  }
  for (const auto& [tag, node] : j["sequences"].items()) {
    auto decoded = coord::decode_sequence(node.dump());
    if (!tag_name_ok(tag) || !decoded) {
      return not_export(fmt::format("sequence \"{}\" is not a sequence's node", tag));
    }
    if (const auto at = tag.find('@'); at != std::string::npos) {
      file.periods[tag.substr(0, at)].push_back(tag);
    }
    file.sequences.emplace(tag, std::move(*decoded));
  }
  return file;
}

// One sequence of the export: made again frozen where ZooKeeper lacks it
// (true), else set beside it (false). An error: why it could not be read
// or made.
Result<bool, std::string> import_sequence(coord::ZkSession& zk, const std::string& root,
                                          const std::string& tag, coord::SequenceNode node,
                                          const ExportFile& file, const std::string& config_file,
                                          BootClock::time_point deadline,
                                          std::vector<std::string>& todo) {
  const auto base = tag.substr(0, tag.find('@'));
  const auto periods_of = [&] {
    const auto found = file.periods.find(base);
    return found == file.periods.end() ? std::vector<std::string>() : found->second;
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto read = until_answered(deadline, [&] { return coord::read_sequence(zk, root, tag); });
    if (read) {
      auto checked =
          behind(zk, root, tag, read.value().node, node, periods_of(), config_file, deadline, todo);
      if (!checked) return fmt::format("sequence \"{}\": {}", tag, checked.error().message);
      return false;
    }
    if (read.error().code != coord::CoordErrc::no_sequence) {
      return fmt::format("cannot read sequence \"{}\": {}", tag, read.error().message);
    }
    // Numbers past the export went out too, which nobody knows: frozen
    // until raised past your data; its floor and next as the export had
    // them, so that a raise below them is refused as ever.
    coord::SequenceNode again = node;
    again.takes.clear();
    again.frozen = true;
    auto created =
        until_answered(deadline, [&] { return coord::create_sequence(zk, root, tag, again); });
    if (!created) {
      // Made meanwhile (a daemon, an operator): set beside it, read again.
      if (created.error().code == coord::CoordErrc::sequence_exists) continue;
      return fmt::format("cannot make sequence \"{}\" again: {}", tag, created.error().message);
    }
    std::cout << fmt::format(
        "made again, frozen: \"{}\" (next {} in the export{}{})\n", tag, node.next,
        node.strict ? ", strict" : "",
        node.reset == PeriodReset::none ? "" : fmt::format(", each {}", to_string(node.reset)));
    // A period is raised with its definition's commands; the definition's
    // name the periods.
    if (tag.find('@') == std::string::npos) {
      todo.push_back(how_to_thaw(tag, node, periods_of(), config_file));
    }
    return true;
  }
  return fmt::format("sequence \"{}\" kept changing while it was made again", tag);
}

// The export's form policy recorded where the root has none (where it has
// another, said: `cluster forms --set` decides), and its migration floor
// where the root's is lower.
void import_policy(coord::ZkSession& zk, const std::string& root, const std::string& data,
                   const ExportFile& file, const std::string& config_file,
                   BootClock::time_point deadline, std::vector<std::string>& todo) {
  if (file.forms) {
    const auto here = coord::recorded_form_policy(data);
    if (here && !here.value()) {
      const auto why = change_root(zk, root, deadline, [&](const std::string& now) {
        auto recorded = coord::recorded_form_policy(now);
        return recorded && !recorded.value()
                   ? std::optional(coord::with_form_policy(now, *file.forms))
                   : std::nullopt;
      });
      if (why) {
        todo.push_back(
            fmt::format("snowflaked cluster forms --set --config FILE   # the export's "
                        "forms ({}): not recorded ({})",
                        describe(*file.forms), *why));
      } else {
        std::cout << fmt::format("the cluster's form policy recorded again: {}\n",
                                 describe(*file.forms));
      }
    } else if (!here || here.value() != file.forms) {
      todo.push_back(fmt::format(
          "# forms: the cluster's differ from the export's ({}): `snowflaked cluster forms "
          "--set` with the config that has the ones you want",
          describe(*file.forms)));
    }
  }
  if (file.floor) {
    const auto here = coord::recorded_floor(data);
    if (!here || here->ms < file.floor->ms) {
      const auto why = change_root(zk, root, deadline, [&](const std::string& now) {
        const auto recorded = coord::recorded_floor(now);
        return !recorded || recorded->ms < file.floor->ms
                   ? std::optional(coord::with_floor(now, *file.floor))
                   : std::nullopt;
      });
      if (!why) {
        std::cout << fmt::format("the migration floor recorded again: above ID {}\n",
                                 file.floor->above_id);
      }
      todo.push_back(fmt::format(
          "snowflaked pool floor --above-id {} --config {}   # waits for every daemon to confirm "
          "the export's migration floor{}",
          file.floor->above_id, config_file, why ? fmt::format(" (not recorded: {})", *why) : ""));
    }
  }
}

}  // namespace

int cluster_import(const std::string& config_file, const std::string& export_file) {
  const auto config = load_config(config_file);
  if (!config) return kExitUsage;
  auto file = read_export(export_file);
  if (!file) return fail(kExitUsage, file.error());
  const std::string& root = config->zookeeper.root;
  if (file.value().root != root) {
    return fail(kExitConflict, fmt::format("the export is of the cluster at {}, this config's is "
                                           "at {}",
                                           file.value().root, root));
  }
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto deadline = answer_deadline(*config);
  const auto data = root_data(*zk, *config, deadline);
  if (!data) return kExitFailure;
  const auto id = coord::recorded_cluster_id(*data);
  if (!file.value().cluster_id.empty() && id && *id != file.value().cluster_id) {
    return fail(kExitConflict,
                fmt::format("the export is of the cluster {}, the root at {} is the cluster {}: "
                            "not this cluster's export",
                            file.value().cluster_id, root, *id));
  }
  std::vector<std::string> todo;
  std::size_t made = 0;
  for (const auto& entry : file.value().sequences) {
    auto one = import_sequence(*zk, root, entry.first, entry.second, file.value(), config_file,
                               deadline, todo);
    if (!one) return fail(kExitFailure, one.error());
    if (one.value()) ++made;
  }
  import_policy(*zk, root, *data, file.value(), config_file, deadline, todo);
  std::cout << fmt::format("{} sequence(s) made again, {} already there\n", made,
                           file.value().sequences.size() - made);
  if (!todo.empty()) {
    std::cout << "to do, as the export says:\n";
    for (const auto& line : todo) std::cout << "  " << line << "\n";
  }
  return kExitOk;
}

}  // namespace snowflake::commands
