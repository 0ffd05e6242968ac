// snowflaked seq raise TAG --above N --config FILE [--timeout MS]: the tag's
// floor raised to N, then a wait until every daemon run that may still hand
// out a number <= N has said it dropped them (its holder node,
// sequence_store/sequence_holders.hpp). Exit 0: no daemon hands out a number <= N
// from now on. Exit 1 names each run that did not confirm in time: cut off
// from ZooKeeper (a sequence has no lease: it goes on handing out its
// ranges), stopped, or killed.
//
// snowflaked seq forget RUN --config FILE [--force]: deletes the holder node
// of a run that is gone for good (killed, and its state directory not used
// again), which would otherwise hold up every raise below what it held. A
// node written within kForgetMinAge is refused (exit 3) without --force: a
// run connected to ZooKeeper rewrites it every minute, so it was alive then.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <thread>

#include "seq_raise.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/sequences/period.hpp"

namespace snowflake::commands {

namespace {

// How old a holder node must be for seq forget to delete it unasked: ten of
// the periods at which a connected run writes it again.
constexpr std::chrono::minutes kForgetMinAge{10};

// The runs that have not confirmed yet, a line each for people.
struct Pending {
  std::vector<std::string> lines;
};

Result<Pending, coord::CoordError> unconfirmed(coord::ZkSession& zk, const std::string& root,
                                               const std::string& tag, std::int64_t above) {
  BOOST_OUTCOME_TRY(holders, coord::read_holders(zk, root));
  Pending out;
  for (const auto& h : holders) {
    const std::string written = format_iso8601_ms(h.written_ms);
    if (!h.record) {
      // Not ours to read: it may hold anything.
      out.lines.push_back(
          fmt::format("  run {}: its holder node is not readable (written {})", h.run, written));
    } else if (coord::holds_unconfirmed(*h.record, tag, above)) {
      const auto& held = h.record->tags.find(tag)->second;
      out.lines.push_back(fmt::format(
          "  run {} ({}) may hand out [{}, {}) of \"{}\" and has not said it dropped what is "
          "<= {} (its node written {})",
          h.run, h.record->owner, held.from, held.to, tag, above, written));
    }
  }
  return out;
}

}  // namespace

int raise_and_confirm(coord::ZkSession& zk, const std::string& root, const std::string& tag,
                      std::int64_t above, std::chrono::milliseconds patience) {
  auto raised = coord::raise_sequence(zk, root, tag, above);
  if (!raised) {
    return fail(raised.error().code == coord::CoordErrc::no_sequence ? kExitUsage : kExitFailure,
                raised.error().message);
  }
  std::cout << fmt::format("sequence \"{}\": floor {}, the next range starts at {}\n", tag,
                           raised.value().floor, raised.value().next);
  // The floor is written; only now are the holder nodes read (a range
  // taken before the floor is named in its holder's node before it is used).
  const auto deadline = BootClock::now() + patience;
  for (;;) {
    auto pending = unconfirmed(zk, root, tag, above);
    if (!pending) {
      return fail(kExitFailure, "cannot read the holders' nodes: " + pending.error().message);
    }
    if (pending.value().lines.empty()) {
      std::cout << fmt::format("confirmed: no daemon hands out a number of \"{}\" at or below {}\n",
                               tag, above);
      return kExitOk;
    }
    if (BootClock::now() > deadline) {
      std::string text = fmt::format(
          "not confirmed within {} ms: a daemon may still hand out a number of \"{}\" at or "
          "below {}:\n",
          patience.count(), tag, above);
      for (const auto& line : pending.value().lines) text += line + '\n';
      text +=
          "A daemon cut off from ZooKeeper or stopped drops them when it is back (run this "
          "again then); one killed and never restarted from its state directory: snowflaked "
          "seq forget RUN";
      return fail(kExitFailure, text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

namespace {

int seq_raise(const std::string& file, const std::string& tag, std::int64_t above,
              std::chrono::milliseconds patience) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  return raise_and_confirm(*zk, config->zookeeper.root, tag, above, patience);
}

int seq_forget(const std::string& file, const std::string& run, bool force) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  auto holders = coord::read_holders(*zk, config->zookeeper.root);
  if (!holders)
    return fail(kExitFailure, "cannot read the holders' nodes: " + holders.error().message);
  const auto holder = std::find_if(holders.value().begin(), holders.value().end(),
                                   [&run](const coord::Holder& h) { return h.run == run; });
  if (holder == holders.value().end()) {
    return fail(kExitUsage, fmt::format("no holder node of run {} (seq list shows them)", run));
  }
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  const std::int64_t age_ms = now_ms - holder->written_ms;
  if (!force && age_ms < std::chrono::milliseconds(kForgetMinAge).count()) {
    // A run connected to ZooKeeper writes its node at least once a minute:
    // one written this recently was alive then, and may be handing out still.
    return fail(
        kExitConflict,
        fmt::format("run {}'s holder node was written {} s ago ({}): its daemon was "
                    "connected to ZooKeeper then, and may still hand out the numbers it "
                    "holds. Nothing deleted. A live run writes it at least every minute: "
                    "wait until it is {} minutes old, or give --force if you know the "
                    "daemon is gone for good",
                    run, std::max<std::int64_t>(0, age_ms / 1000),
                    format_iso8601_ms(holder->written_ms),
                    std::chrono::duration_cast<std::chrono::minutes>(kForgetMinAge).count()));
  }
  auto removed = coord::remove_holder(*zk, config->zookeeper.root, run);
  if (!removed) return fail(kExitFailure, "cannot delete: " + removed.error().message);
  if (!removed.value()) {
    return fail(kExitUsage, fmt::format("no holder node of run {} (seq list shows them)", run));
  }
  std::cout << fmt::format("run {}'s holder node deleted\n", run);
  return kExitOk;
}

// A tag, or one period of a tag that restarts each period ("invoice@2026-11-26":
// a period frozen after ZooKeeper lost some history is raised like a tag).
bool is_raisable(std::string_view name) {
  const auto at = name.find('@');
  if (at == std::string_view::npos) return is_valid_name(name);
  const auto key = name.substr(at + 1);
  return is_valid_name(name.substr(0, at)) &&
         (is_period_key(PeriodReset::daily, key) || is_period_key(PeriodReset::monthly, key) ||
          is_period_key(PeriodReset::yearly, key));
}

}  // namespace

Parsed seq_raise_command(const Options& options, const Arguments& args) {
  if (args.size() != 2 || !is_raisable(args[1])) {
    return std::string(
        "seq raise takes one tag, [A-Za-z0-9._-]{1,64}, not . or .. (or one period of it: "
        "TAG@2026-11-26, TAG@2026-11, TAG@2026)");
  }
  if (!options.count("above")) return std::string("seq raise needs --above N");
  const auto text = options["above"].as<std::string>();
  std::int64_t above = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), above);
  if (ec != std::errc() || end != text.data() + text.size() || above < 0) {
    return std::string("--above: must be a whole number from 0 to 9223372036854775807");
  }
  const auto patience = options.count("timeout")
                            ? std::chrono::milliseconds(options["timeout"].as<std::uint32_t>())
                            : kDefaultRaisePatience;
  return Action([file = *config_path(options), tag = args[1], above, patience] {
    return seq_raise(file, tag, above, patience);
  });
}

Parsed seq_forget_command(const Options& options, const Arguments& args) {
  if (args.size() != 2 || !is_valid_name(args[1])) {
    return std::string("seq forget takes one run (seq list names them)");
  }
  return Action([file = *config_path(options), run = args[1], force = options.count("force") > 0] {
    return seq_forget(file, run, force);
  });
}

}  // namespace snowflake::commands
