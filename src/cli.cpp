#include "cli.hpp"

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <charconv>
#include <cstdint>
#include <sstream>
#include <vector>

#include "snowflake/names.hpp"

namespace snowflake {

namespace po = boost::program_options;

namespace {

po::options_description visible_options() {
  po::options_description options("Options");
  // One option a line, as program_options is read.
  // clang-format off
  options.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("config,c", po::value<std::string>()->value_name("FILE"), "JSON config file")
      ("log-level", po::value<std::string>()->value_name("LEVEL"),
       "trace, debug, info, warn, error, critical or off (overrides the config)")
      ("listen", po::value<std::string>()->value_name("ADDR"),
       "address to serve HTTP on, e.g. 127.0.0.1:8080 or [::1]:8080 (overrides the config)")
      ("json", "pool status: JSON instead of tables; get: the replica's JSON answer")
      ("count", po::value<std::uint32_t>()->value_name("N"), "get: how many IDs (default 1)")
      ("servers", po::value<std::string>()->value_name("URL,..."),
       "get: the replicas, e.g. http://10.0.0.1:8080,http://10.0.0.2:8080 (default: "
       "$SNOWFLAKED_SERVERS, else http://127.0.0.1:8080)")
      ("timeout", po::value<std::uint32_t>()->value_name("MS"),
       "get: give up after this long, waits for Retry-After included (default 5000); pool "
       "floor: wait this long for every owner's confirmation (default: the lease + "
       "safety margin + 10 s)")
      ("above-id", po::value<std::string>()->value_name("N"),
       "pool floor: no daemon of the cluster issues an ID <= N (the largest ID in your tables)")
      ("from-leaf", po::value<std::string>()->value_name("ROOT"),
       "pool floor: the floor above every ID the Leaf cluster at ROOT (/snowflake/<leaf.name>) "
       "can have issued");
  // clang-format on
  return options;
}

}  // namespace

std::string usage_text() {
  std::ostringstream out;
  out << "Usage:\n"
         "  snowflaked [--config FILE] [--listen ADDR] [--log-level LEVEL]\n"
         "                                                 run the daemon\n"
         "  snowflaked decode ID [--config FILE]             print an ID's fields as JSON\n"
         "  snowflaked check-config FILE                     validate a config file\n"
         "  snowflaked pool status --config FILE [--json]    the recycle pool's worker IDs: "
         "owner,\n"
         "                                                 heartbeat age (ZooKeeper time), floor\n"
         "  snowflaked pool floor --config FILE (--above-id N | --from-leaf ROOT) [--timeout MS]\n"
         "                                                 no daemon of the cluster issues an ID\n"
         "                                                 <= N once this exits 0 (a migration)\n"
         "  snowflaked get [TAG] [--count N] [--servers URL,...] [--timeout MS] [--json]\n"
         "                                                 IDs, one a line, from whichever "
         "replica\n"
         "                                                 can issue (exit 1: none could)\n"
         "\n"
      << visible_options()
      << "\nExit codes: 0 success, 1 runtime failure, 2 bad command line or config.\n";
  return out.str();
}

Result<CommandLine, std::string> parse_command_line(int argc, const char* const* argv) {
  po::options_description all = visible_options();
  all.add_options()("command", po::value<std::string>())("args",
                                                         po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("command", 1).add("args", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return std::string(e.what());
  }

  CommandLine cl;
  if (vm.count("config")) cl.config_path = vm["config"].as<std::string>();
  if (vm.count("log-level")) cl.log_level = vm["log-level"].as<std::string>();
  if (vm.count("listen")) cl.listen = vm["listen"].as<std::string>();
  cl.json = vm.count("json") > 0;
  if (vm.count("count")) cl.count = vm["count"].as<std::uint32_t>();
  if (vm.count("servers")) cl.servers = vm["servers"].as<std::string>();
  if (vm.count("timeout")) {
    cl.timeout_ms = vm["timeout"].as<std::uint32_t>();
    cl.timeout_given = true;
  }
  if (vm.count("above-id")) {
    const auto text = vm["above-id"].as<std::string>();
    std::uint64_t id = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        id > static_cast<std::uint64_t>(INT64_MAX)) {
      return fmt::format(
          "--above-id: must be an ID (decimal digits, at most 9223372036854775807), "
          "got \"{}\"",
          text);
    }
    cl.above_id = id;
  }
  if (vm.count("from-leaf")) cl.from_leaf = vm["from-leaf"].as<std::string>();
  if (vm.count("help")) {
    cl.action = Action::help;
    return cl;
  }
  if (vm.count("version")) {
    cl.action = Action::version;
    return cl;
  }

  const std::vector<std::string> args =
      vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (!vm.count("command")) return cl;  // run the daemon
  const std::string command = vm["command"].as<std::string>();
  if (command == "decode") {
    if (args.size() != 1) return std::string("decode takes exactly one ID");
    cl.action = Action::decode;
    cl.id_text = args[0];
  } else if (command == "check-config") {
    if (args.size() > 1 || (args.empty() && !cl.config_path)) {
      return std::string("check-config takes exactly one FILE");
    }
    cl.action = Action::check_config;
    if (!args.empty()) cl.config_path = args[0];
  } else if (command == "pool") {
    if (args.size() != 1 || (args[0] != "status" && args[0] != "floor")) {
      return std::string("pool takes one subcommand: status or floor");
    }
    if (!cl.config_path)
      return fmt::format("pool {} needs --config FILE (ZooKeeper and root)", args[0]);
    cl.action = args[0] == "status" ? Action::pool_status : Action::pool_floor;
    if (cl.action == Action::pool_floor && cl.above_id.has_value() == cl.from_leaf.has_value()) {
      return std::string("pool floor takes one of --above-id N and --from-leaf ROOT");
    }
  } else if (command == "get") {
    if (args.size() > 1) return std::string("get takes at most one TAG");
    if (!args.empty()) cl.tag = args[0];
    if (!is_valid_name(cl.tag))
      return fmt::format("get: TAG must match [A-Za-z0-9._-]{{1,64}}, got \"{}\"", cl.tag);
    if (cl.count < 1) return std::string("get: --count must be at least 1");
    if (cl.timeout_ms < 1) return std::string("get: --timeout must be at least 1 ms");
    cl.action = Action::get;
  } else {
    return fmt::format("unknown command \"{}\"", command);
  }
  return cl;
}

}  // namespace snowflake
