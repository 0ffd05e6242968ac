// snowflaked seq import --leaf-alloc FILE --config FILE [--timeout MS]:
// Leaf-segment's tags as sequences (migration/leaf_alloc.hpp reads the
// file). Each tag starts at its max_id, the first number Leaf never handed
// out. A tag that exists already is raised past max_id - 1 instead, with
// `seq raise`'s contract: so the import can run again (after the last Leaf
// server stopped) and only ever lifts a sequence.

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "seq_raise.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/migration/leaf_alloc.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"

namespace snowflake::commands {

namespace {

int seq_import(const std::string& file, const std::string& leaf_alloc,
               std::chrono::milliseconds patience) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  std::ifstream in(leaf_alloc, std::ios::binary);
  if (!in) return fail(kExitUsage, fmt::format("--leaf-alloc {}: cannot read it", leaf_alloc));
  std::ostringstream text;
  text << in.rdbuf();
  const auto rows = migration::parse_leaf_alloc(text.str());
  if (!rows) return fail(kExitUsage, fmt::format("--leaf-alloc {}: {}", leaf_alloc, rows.error()));
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto& root = config->zookeeper.root;
  int worst = kExitOk;
  for (const auto& row : rows.value()) {
    auto created = coord::create_sequence(*zk, root, row.tag, row.max_id, row.step);
    if (created) {
      std::cout << fmt::format("sequence \"{}\" created: numbers from {}, ranges of {} at least\n",
                               row.tag, row.max_id, row.step);
      continue;
    }
    if (created.error().code != coord::CoordErrc::sequence_exists) {
      std::cerr << fmt::format("snowflaked: \"{}\": {}\n", row.tag, created.error().message);
      worst = std::max(worst, kExitFailure);
      continue;
    }
    // There already (an import run before): lifted past what Leaf handed out.
    worst = std::max(worst, raise_and_confirm(*zk, root, row.tag, row.max_id - 1, patience));
  }
  std::cout << fmt::format("{} tag(s) from {}{}\n", rows.value().size(), leaf_alloc,
                           worst == kExitOk ? "" : ": not all of them, see above");
  return worst;
}

}  // namespace

Parsed seq_import_command(const Options& options, const Arguments& args) {
  if (args.size() != 1) return std::string("seq import takes no arguments but --leaf-alloc FILE");
  if (!options.count("leaf-alloc")) {
    return std::string(
        "seq import needs --leaf-alloc FILE (mysql --batch -e 'SELECT biz_tag, max_id, step "
        "FROM leaf_alloc')");
  }
  const auto patience = options.count("timeout")
                            ? std::chrono::milliseconds(options["timeout"].as<std::uint32_t>())
                            : kDefaultRaisePatience;
  return Action([file = *config_path(options), leaf_alloc = options["leaf-alloc"].as<std::string>(),
                 patience] { return seq_import(file, leaf_alloc, patience); });
}

}  // namespace snowflake::commands
