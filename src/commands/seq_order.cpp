// snowflaked seq order TAG strict|per-daemon --config FILE [--timeout MS]:
// a tag's order changed (docs/api.md, "Strict order across the cluster").
//
// To strict: the node says strict and its owner record is made in one
// multi; from then on only the owner takes ranges. Numbers the daemons
// took before are all below the node's `next` at that write, so a raise to
// next - 1 (seq_raise.hpp) drops every one of them, and its confirmation
// (every run that held some said it dropped them) is what makes the order
// strict: exit 0 means every number handed out from then on is in
// real-time order with every later one. Until then the old buffers may
// still interleave.
//
// To per-daemon: the node says so and the owner record is deleted, in one
// multi; the daemons take ranges of their own from then on. Nothing is
// dropped (every number stays unique), and the order is per daemon again.

#include <fmt/format.h>

#include <iostream>

#include "seq_raise.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"

namespace snowflake::commands {

namespace {

int seq_order(const std::string& file, const std::string& tag, bool strict,
              std::chrono::milliseconds patience) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const std::string& root = config->zookeeper.root;
  auto changed = coord::set_sequence_order(*zk, root, tag, strict);
  if (!changed) {
    switch (changed.error().code) {
      case coord::CoordErrc::no_sequence:
      case coord::CoordErrc::periodic:
        return fail(kExitUsage, changed.error().message);
      case coord::CoordErrc::frozen:
        return fail(kExitConflict, changed.error().message);
      default:
        return fail(kExitFailure, changed.error().message);
    }
  }
  const auto& change = changed.value();
  const char* order = strict ? "strict" : "per-daemon";
  std::cout << fmt::format("sequence \"{}\": order {}{}\n", tag, order,
                           change.changed ? "" : " (already)");
  if (!strict) return kExitOk;
  // Every range taken before the change ends below `next`: dropped, and
  // confirmed dropped by each run that held one. Run again (a confirmation
  // that timed out), it raises to the next number then: the owner's
  // buffered rest is a gap, the runs that had not confirmed confirm.
  std::cout << fmt::format("dropping what the daemons took before (below {})\n", change.next);
  const int raised = raise_and_confirm(*zk, root, tag, change.next - 1, patience);
  if (raised == kExitOk) {
    std::cout << fmt::format("\"{}\" is in strict order from now on: one owner hands it out\n",
                             tag);
  }
  return raised;
}

}  // namespace

Parsed seq_order_command(const Options& options, const Arguments& args) {
  if (args.size() != 3 || !is_valid_name(args[1]) ||
      (args[2] != "strict" && args[2] != "per-daemon")) {
    return std::string(
        "seq order takes one tag, [A-Za-z0-9._-]{1,64}, and its order: strict or per-daemon");
  }
  const auto patience = options.count("timeout")
                            ? std::chrono::milliseconds(options["timeout"].as<std::uint32_t>())
                            : kDefaultRaisePatience;
  return Action([file = *config_path(options), tag = args[1], strict = args[2] == "strict",
                 patience] { return seq_order(file, tag, strict, patience); });
}

}  // namespace snowflake::commands
