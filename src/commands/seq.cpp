// snowflaked seq create TAG --start N [--step S] --config FILE: a new dense
// sequence; snowflaked seq list --config FILE [--json]: the sequences, each
// with its next unallocated number, its step, its floor, the last ranges
// taken (and by which run of a daemon), and what each daemon run holds of it
// and how long that lasts at its rate (its holder node). seq raise and seq
// forget: seq_raise.cpp; seq import: seq_import.cpp.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>

#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/sequences/number_template.hpp"
#include "snowflake/sequences/period.hpp"

namespace snowflake::commands {

namespace {

// A whole number from `lo` to kSequenceMax, or nullopt.
std::optional<std::int64_t> number_option(const Options& options, const char* name,
                                          std::int64_t lo) {
  const auto text = options[name].as<std::string>();
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < lo) return std::nullopt;
  return n;
}

// The run a take's nonce names ("<run>-<attempt>").
std::string_view run_of(std::string_view nonce) { return nonce.substr(0, nonce.rfind('-')); }

// What each run holds of `tag`, as its holder node said when last written.
nlohmann::ordered_json holdings(const std::vector<coord::Holder>& holders, const std::string& tag) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& h : holders) {
    if (!h.record) continue;
    const auto held = h.record->tags.find(tag);
    if (held == h.record->tags.end()) continue;
    const auto& x = held->second;
    out.push_back(
        {{"run", h.run},
         {"owner", h.record->owner},
         {"from", x.from},
         {"to", x.to},
         {"dropped_through", x.dropped_through},
         {"left", x.left},
         {"rate", x.rate},
         // How long its buffer lasts at its rate (null: no rate yet).
         {"seconds_left", x.rate > 0 ? nlohmann::ordered_json(static_cast<double>(x.left) / x.rate)
                                     : nlohmann::ordered_json()},
         {"written", format_iso8601_ms(h.written_ms)}});
  }
  return out;
}

int seq_create(const std::string& file, const std::string& tag, const coord::SequenceNode& first) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  auto created = coord::create_sequence(*zk, config->zookeeper.root, tag, first);
  if (!created) {
    return fail(
        created.error().code == coord::CoordErrc::sequence_exists ? kExitUsage : kExitFailure,
        created.error().message);
  }
  std::cout << fmt::format(
      "sequence \"{}\" created under {}: numbers from {}{}, ranges of {} at least{}{}\n", tag,
      config->zookeeper.root, first.next,
      first.end == coord::kSequenceMax ? std::string() : fmt::format(" to {}", first.end - 1),
      first.step,
      first.number_template.empty() ? std::string()
                                    : fmt::format(", printed as '{}'", first.number_template),
      first.reset == PeriodReset::none
          ? std::string()
          : fmt::format(", from {} again each {} period in {} (ended periods kept {} s)",
                        first.next, to_string(first.reset), first.time_zone, first.retention_s));
  if (first.strict) {
    std::cout << "strict order: one daemon at a time hands it out, each number above every one "
                 "answered before it was asked for\n";
  }
  if (first.frozen) {
    std::cout << fmt::format(
        "frozen: nothing of it is handed out{} until seq raise {} --above N{}\n",
        first.reset == PeriodReset::none ? "" : " and no period made", tag,
        first.reset == PeriodReset::none
            ? ""
            : fmt::format(" (each period first: seq raise {}@PERIOD --above N; then --above 0)",
                          tag));
  }
  return kExitOk;
}

// One sequence's row of seq list (a period's too): its node as read, and
// what each run holds of it.
nlohmann::ordered_json sequence_row(const std::string& tag, const coord::SequenceNode& n,
                                    const std::vector<coord::Holder>& holders) {
  nlohmann::ordered_json takes = nlohmann::ordered_json::array();
  for (const auto& t : n.takes)
    takes.push_back({{"run", run_of(t.owner)}, {"start", t.start}, {"end", t.end}});
  std::reverse(takes.begin(), takes.end());  // newest first
  nlohmann::ordered_json row{
      {"tag", tag},
      {"next", n.next},
      {"step", n.step},
      {"floor", n.floor},
      {"max", n.end - 1},
      {"template", n.number_template.empty() ? nlohmann::ordered_json()
                                             : nlohmann::ordered_json(n.number_template)}};
  if (n.frozen) row["frozen"] = true;
  if (n.reset != PeriodReset::none) {
    row["reset"] = to_string(n.reset);
    row["time_zone"] = n.time_zone;
    row["retention_s"] = n.retention_s;
    row["removed_through"] = n.removed_through.empty() ? nlohmann::ordered_json()
                                                       : nlohmann::ordered_json(n.removed_through);
    // The period this machine's clock is in (a daemon's decides its own).
    if (const auto rule = PeriodRule::make(n.reset, n.time_zone)) {
      row["current_period"] =
          rule->period_at(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count())
              .key;
    }
    row["periods"] = nlohmann::ordered_json::array();
    return row;  // its numbers are in its periods' rows
  }
  row["recent_ranges"] = std::move(takes);
  row["holders"] = holdings(holders, tag);
  return row;
}

// A strict sequence's order and owner ("owner": null while it has none).
void add_owner(coord::ZkSession& zk, const std::string& root, const std::string& tag,
               nlohmann::ordered_json& row) {
  row["order"] = "strict";
  const auto owner = coord::read_strict_owner(zk, root, tag, false);
  if (!owner) {
    row["owner_error"] = owner.error().message;
  } else if (const auto& o = owner.value().owner; o && !o->released) {
    row["owner"] = {{"address", o->address}, {"worker_id", o->worker_id}, {"run", o->token}};
  } else {
    row["owner"] = nullptr;
  }
}

// Each period's row under its sequence's ("periods"), the rest as they are.
nlohmann::ordered_json list_rows(coord::ZkSession& zk, const std::string& root,
                                 const std::vector<std::string>& tags,
                                 const std::vector<coord::Holder>& holders) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& tag : tags) {
    const auto read = coord::read_sequence(zk, root, tag);
    nlohmann::ordered_json row =
        read ? sequence_row(tag, read.value().node, holders)
             : nlohmann::ordered_json{{"tag", tag}, {"error", read.error().message}};
    if (read && read.value().node.strict) add_owner(zk, root, tag, row);
    const auto at = tag.find('@');
    if (at == std::string::npos) {
      out.push_back(std::move(row));
      continue;
    }
    // A period's row goes under its definition's, which sorts before it
    // (its name is a prefix of the period's).
    const std::string parent = tag.substr(0, at);
    row["period"] = tag.substr(at + 1);
    auto owner = std::find_if(out.begin(), out.end(), [&parent](const nlohmann::ordered_json& r) {
      return r["tag"] == parent && r.contains("periods");
    });
    if (owner == out.end()) {
      out.push_back(std::move(row));  // its definition is gone: shown on its own
    } else {
      (*owner)["periods"].push_back(std::move(row));
    }
  }
  return out;
}

void print_holders(const nlohmann::ordered_json& row) {
  for (const auto& h : row["holders"]) {
    const auto& seconds = h["seconds_left"];
    std::cout << fmt::format(
        "  held by run {} ({}): [{}, {}), {} left{} (as of {})\n", h["run"].get<std::string>(),
        h["owner"].get<std::string>(), h["from"].get<std::int64_t>(), h["to"].get<std::int64_t>(),
        h["left"].get<std::int64_t>(),
        seconds.is_null()
            ? std::string()
            : fmt::format(", {:.0f} s at {:.1f}/s", seconds.get<double>(), h["rate"].get<double>()),
        h["written"].get<std::string>());
  }
}

std::string newest_range(const nlohmann::ordered_json& row) {
  const auto& ranges = row["recent_ranges"];
  if (ranges.empty()) return "-";
  return fmt::format("[{}, {}) ({})", ranges[0]["start"].get<std::int64_t>(),
                     ranges[0]["end"].get<std::int64_t>(), ranges[0]["run"].get<std::string>());
}

void print_periods(const nlohmann::ordered_json& row) {
  std::cout << fmt::format(
      "  printed as {}, from {} again each {} period in {}; ended periods kept {} s{}\n",
      row["template"].is_null() ? std::string("the number")
                                : "'" + row["template"].get<std::string>() + "'",
      row["next"].get<std::int64_t>(), row["reset"].get<std::string>(),
      row["time_zone"].get<std::string>(), row["retention_s"].get<std::int64_t>(),
      row["removed_through"].is_null()
          ? std::string()
          : fmt::format(" (removed through {})", row["removed_through"].get<std::string>()));
  const std::string current = row.value("current_period", std::string());
  for (const auto& p : row["periods"]) {
    const std::string key = p["period"].get<std::string>();
    if (p.contains("error")) {
      std::cout << fmt::format("  period {}: {}\n", key, p["error"].get<std::string>());
      continue;
    }
    std::cout << fmt::format("  period {}{}: next {}, newest range {}\n", key,
                             key == current ? " (current)" : "", p["next"].get<std::int64_t>(),
                             newest_range(p));
    print_holders(p);
  }
}

void print_owner(const nlohmann::ordered_json& row) {
  if (row.contains("owner_error")) {
    std::cout << fmt::format("  strict order; its owner cannot be read: {}\n",
                             row["owner_error"].get<std::string>());
  } else if (row["owner"].is_null()) {
    std::cout << "  strict order; no owner now (the first daemon that ranks for it claims it)\n";
  } else {
    const auto& o = row["owner"];
    std::cout << fmt::format("  strict order; owned by {} (worker ID {}, run {})\n",
                             o["address"].get<std::string>(), o["worker_id"].get<std::uint32_t>(),
                             o["run"].get<std::string>());
  }
}

void print_rows(const nlohmann::ordered_json& out) {
  std::cout << fmt::format("{:<24} {:>20} {:>12} {:>20}  {}\n", "TAG", "NEXT", "STEP", "FLOOR",
                           "NEWEST RANGE (run)");
  for (const auto& row : out) {
    if (row.contains("error")) {
      std::cout << fmt::format("{:<24} {}\n", row["tag"].get<std::string>(),
                               row["error"].get<std::string>());
      continue;
    }
    const bool periodic = row.contains("periods");
    std::cout << fmt::format("{:<24} {:>20} {:>12} {:>20}  {}\n", row["tag"].get<std::string>(),
                             row["next"].get<std::int64_t>(), row["step"].get<std::int64_t>(),
                             row["floor"].get<std::int64_t>(),
                             periodic ? "(by period, below)" : newest_range(row));
    if (row.contains("order")) print_owner(row);
    if (periodic) {
      print_periods(row);
      continue;
    }
    if (!row["template"].is_null() || row["max"].get<std::int64_t>() != coord::kSequenceMax - 1) {
      std::cout << fmt::format("  printed as {}, numbers up to {}\n",
                               row["template"].is_null()
                                   ? std::string("the number")
                                   : "'" + row["template"].get<std::string>() + "'",
                               row["max"].get<std::int64_t>());
    }
    print_holders(row);
  }
}

int seq_list(const std::string& file, bool json) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const auto& root = config->zookeeper.root;
  const auto tags = coord::sequence_tags(*zk, root);
  if (!tags) return fail(kExitFailure, "cannot list the sequences: " + tags.error().message);
  const auto holders = coord::read_holders(*zk, root);
  if (!holders) return fail(kExitFailure, "cannot read the holders: " + holders.error().message);
  const auto out = list_rows(*zk, root, tags.value(), holders.value());
  if (json) {
    std::cout << out.dump(2) << '\n';
  } else {
    print_rows(out);
  }
  return kExitOk;
}

const std::string kStartRange = "from 1 to 9223372036854775806";

// "90d", "12h", "30m", "3600s": seconds, at most 100 years; nullopt otherwise.
std::optional<std::int64_t> parse_retention(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  std::int64_t unit = 0;
  switch (text.back()) {
    case 'd':
      unit = 86400;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'm':
      unit = 60;
      break;
    case 's':
      unit = 1;
      break;
    default:
      return std::nullopt;
  }
  std::int64_t n = 0;
  const auto digits = text.substr(0, text.size() - 1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < 0) return std::nullopt;
  if (n > std::int64_t{36500} * 86400 / unit) return std::nullopt;
  return n * unit;
}

// --reset, --time-zone and --retention into the definition's fields; none
// for a sequence that never restarts. A bad one is exit 2 naming it.
Result<PeriodReset, std::string> reset_options(const Options& options, coord::SequenceNode& first) {
  if (!options.count("reset")) {
    for (const char* only : {"time-zone", "retention"}) {
      if (options.count(only)) return fmt::format("--{}: only with --reset", only);
    }
    return PeriodReset::none;
  }
  const auto reset = parse_period_reset(options["reset"].as<std::string>());
  if (!reset || *reset == PeriodReset::none) {
    return std::string("--reset: must be daily, monthly or yearly");
  }
  if (!options.count("time-zone")) {
    return std::string(
        "--time-zone: a sequence that restarts each period needs the zone whose midnight starts "
        "one, e.g. Europe/Berlin or UTC");
  }
  const auto zone = options["time-zone"].as<std::string>();
  if (!PeriodRule::make(*reset, zone)) {
    return fmt::format(
        "--time-zone: \"{}\" is not a time zone of this machine's tzdata (a name such as "
        "Europe/Berlin, America/New_York or UTC)",
        zone);
  }
  if (!options.count("template")) {
    return std::string(
        "--template: a sequence that restarts each period needs one naming the period's date, "
        "e.g. 'INV-{yyyy}{MM}{dd}-{n:06}' (its numbers repeat each period; the date tells them "
        "apart)");
  }
  first.reset = *reset;
  first.time_zone = zone;
  first.retention_s = std::int64_t{31} * 86400;
  if (options.count("retention")) {
    const auto r = parse_retention(options["retention"].as<std::string>());
    if (!r) {
      return std::string(
          "--retention: must be a whole number of days, hours, minutes or seconds, e.g. 90d, "
          "12h, 30m or 3600s (at most 36500d)");
    }
    first.retention_s = *r;
  }
  return *reset;
}

// The first node of `seq create`: --start, --step, --template and --max,
// each checked here (a bad one is exit 2 naming it, and nothing is made).
Result<coord::SequenceNode, std::string> first_node(const Options& options) {
  coord::SequenceNode first;
  if (options.count("start")) {
    const auto start = number_option(options, "start", 1);
    if (!start || *start >= coord::kSequenceMax)
      return "--start: must be a whole number " + kStartRange;
    first.next = *start;
  }
  first.step = 1000;
  if (options.count("step")) {
    const auto s = number_option(options, "step", 1);
    if (!s || *s > 2147483648)
      return std::string("--step: must be a whole number from 1 to 2147483648");
    first.step = *s;
  }
  const auto reset = reset_options(options, first);
  if (!reset) return reset.error();
  std::int64_t widest = coord::kSequenceMax - 1;
  if (options.count("template")) {
    auto parsed = NumberTemplate::parse(options["template"].as<std::string>(), reset.value());
    if (!parsed) return "--template: " + parsed.error();
    first.number_template = parsed.value().text();
    widest = parsed.value().widest();
  }
  std::int64_t max = widest;
  if (options.count("max")) {
    const auto m = number_option(options, "max", 1);
    if (!m || *m >= coord::kSequenceMax) return "--max: must be a whole number " + kStartRange;
    if (*m > widest) {
      return fmt::format("--max: {} is wider than the template prints (at most {})", *m, widest);
    }
    max = *m;
  }
  if (max < first.next) {
    if (!options.count("max")) {
      return fmt::format("--start: {} is wider than the template prints (at most {})", first.next,
                         max);
    }
    return fmt::format("--max: {} is below the first number ({}): the sequence would be empty", max,
                       first.next);
  }
  first.end = max + 1;
  // Made again after ZooKeeper lost it: no daemon hands out (or makes a
  // period from) what may repeat numbers handed out before, until raised.
  first.frozen = options.count("frozen") > 0;
  if (options.count("order")) {
    const auto order = options["order"].as<std::string>();
    if (order != "strict" && order != "per-daemon") {
      return std::string("--order: must be strict or per-daemon");
    }
    first.strict = order == "strict";
    if (first.strict && first.reset != PeriodReset::none) {
      return std::string("--order strict: not with --reset (a strict sequence never restarts)");
    }
  }
  return first;
}

Parsed seq_create_command(const Options& options, const std::string& file, const std::string& tag) {
  auto first = first_node(options);
  if (!first) return first.error();
  return Action([file, tag, first = first.value()] { return seq_create(file, tag, first); });
}

}  // namespace

Parsed seq_command(const Options& options, const Arguments& args) {
  if (args.empty() || (args[0] != "create" && args[0] != "list" && args[0] != "raise" &&
                       args[0] != "forget" && args[0] != "import" && args[0] != "order")) {
    return std::string("seq takes a subcommand: create, list, raise, order, forget or import");
  }
  if (!options.count("config")) {
    return fmt::format("seq {} needs --config FILE (ZooKeeper and root)", args[0]);
  }
  if (args[0] == "raise") return seq_raise_command(options, args);
  if (args[0] == "forget") return seq_forget_command(options, args);
  if (args[0] == "order") return seq_order_command(options, args);
  if (args[0] == "import") return seq_import_command(options, args);
  const std::string file = *config_path(options);
  if (args[0] == "list") {
    if (args.size() != 1) return std::string("seq list takes no arguments");
    return Action([file, json = options.count("json") > 0] { return seq_list(file, json); });
  }
  if (args.size() != 2 || !is_valid_name(args[1])) {
    return std::string("seq create takes one tag, [A-Za-z0-9._-]{1,64}, not . or ..");
  }
  return seq_create_command(options, file, args[1]);
}

}  // namespace snowflake::commands
