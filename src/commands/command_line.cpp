#include "snowflake/commands/command_line.hpp"

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <iostream>
#include <sstream>
#include <vector>

#include "snowflake/process/stop_signals.hpp"
#include "snowflake/version.hpp"

namespace snowflake::commands {

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
       "address to serve HTTP on, e.g. 127.0.0.1:8080 or [::1]:8080 (overrides the config); "
       "probe: the address the daemon was given")
      ("json", "pool status, seq list: JSON instead of tables; get: the replica's JSON answer")
      ("count", po::value<std::uint32_t>()->value_name("N"), "get: how many IDs (default 1)")
      ("servers", po::value<std::string>()->value_name("URL,..."),
       "get: the replicas, e.g. http://10.0.0.1:8080,http://10.0.0.2:8080 (default: "
       "$SNOWFLAKED_SERVERS, else http://127.0.0.1:8080); https:// speaks TLS")
      ("cacert", po::value<std::string>()->value_name("FILE"),
       "get: the CAs (PEM) that https:// replicas' certificates must chain to (default: "
       "$SNOWFLAKED_CACERT, else the system's)")
      ("timeout", po::value<std::uint32_t>()->value_name("MS"),
       "get: give up after this long, waits for Retry-After included (default 5000); probe: "
       "for the answer (default 1000); pool "
       "floor, cluster fence: wait this long for every owner's confirmation (default: the "
       "lease + safety margin + 10 s); seq raise, seq order, seq import: for every holder's "
       "(default 10000)")
      ("wait", po::value<std::uint32_t>()->value_name("MS"),
       "cluster create, cluster fence: keep trying to reach ZooKeeper this long (default: "
       "zookeeper.connect_timeout_ms); cluster fence started before a restored ZooKeeper "
       "lands the moment it answers, and asks a step again while its answer is lost")
      ("above-id", po::value<std::string>()->value_name("N"),
       "pool floor: no daemon of the cluster issues an ID <= N (the largest ID in your tables)")
      ("from-leaf", po::value<std::string>()->value_name("ROOT"),
       "pool floor: the floor above every ID the Leaf cluster at ROOT (/snowflake/<leaf.name>) "
       "can have issued")
      ("start", po::value<std::string>()->value_name("N"),
       "seq create: the sequence's first number (default 1)")
      ("template", po::value<std::string>()->value_name("T"),
       "seq create: how each number is printed, e.g. 'ORD-{n:08}' or "
       "'INV-{yyyy}{MM}{dd}-{n:06}' ({yyyy} {yy} {MM} {dd} {n} {n:0W}; docs/api.md)")
      ("max", po::value<std::string>()->value_name("N"),
       "seq create: the sequence's largest number, per period with --reset (default: the "
       "largest its template prints)")
      ("reset", po::value<std::string>()->value_name("PERIOD"),
       "seq create: restart from --start each daily, monthly or yearly period (needs "
       "--time-zone and a --template naming the period's date)")
      ("time-zone", po::value<std::string>()->value_name("ZONE"),
       "seq create --reset: the zone whose midnight starts a period, e.g. Europe/Berlin or UTC")
      ("retention", po::value<std::string>()->value_name("D"),
       "seq create --reset: how long an ended period's node is kept, e.g. 90d, 12h (default "
       "31d)")
      ("frozen", "seq create: made frozen (503 sequence_frozen, no period made) until seq "
       "raise: a sequence made again after ZooKeeper lost it (docs/operations.md)")
      ("order", po::value<std::string>()->value_name("ORDER"),
       "seq create: per-daemon (default: each daemon's numbers rise, interleaved across daemons) "
       "or strict (one owner at a time: every number above each one answered before it was "
       "asked for, cluster-wide)")
      ("step", po::value<std::string>()->value_name("S"),
       "seq create: the smallest range a daemon takes (default 1000)")
      ("above", po::value<std::string>()->value_name("N"),
       "seq raise: no daemon hands out a number <= N of the tag")
      ("set", "cluster forms: make this config's forms.default and forms.tags the cluster's "
       "form policy")
      ("force", "seq forget: delete a holder node written within the last 10 minutes too (its "
       "daemon was connected to ZooKeeper then: know that it is gone)")
      ("leaf-alloc", po::value<std::string>()->value_name("FILE"),
       "seq import: the output of mysql --batch -e 'SELECT biz_tag, max_id, step FROM "
       "leaf_alloc'")
      ("seq", "get: TAG is a dense sequence (GET /seq/TAG); a strict one's refusal names its "
              "owner, which is asked next")
      ("form", po::value<std::string>()->value_name("FORM"),
       "get: the IDs as plain, opaque or uuid (default: the tag's form); decode: the ID's "
       "form (default: a UUID if it looks like one, else plain)")
      ("tag", po::value<std::string>()->value_name("TAG"),
       "decode --form opaque: the tag the opaque ID was issued for")
      ("pool", po::value<std::string>()->value_name("P"),
       "lease forget: the named lease pool the worker ID is in (default: the cluster's own)");
  // clang-format on
  return options;
}

Parsed pool_command(const Options& options, const Arguments& args) {
  if (args.size() != 1 || (args[0] != "status" && args[0] != "floor")) {
    return std::string("pool takes one subcommand: status or floor");
  }
  if (!options.count("config")) {
    return fmt::format("pool {} needs --config FILE (ZooKeeper and root)", args[0]);
  }
  return args[0] == "status" ? pool_status_command(options) : pool_floor_command(options);
}

}  // namespace

std::string usage_text() {
  std::ostringstream out;
  out << R"(Usage:
  snowflaked [--config FILE] [--listen ADDR] [--log-level LEVEL]
                                                 run the daemon
  snowflaked decode ID [--config FILE] [--form opaque --tag TAG]
                                                 print an ID's fields as JSON: a plain ID, a
                                                 UUID, or an opaque ID (the config's key)
  snowflaked check-config FILE                     validate a config file
  snowflaked pool status --config FILE [--json]    the recycle pool's worker IDs: owner,
                                                 heartbeat age (ZooKeeper time), floor
  snowflaked pool floor --config FILE (--above-id N | --from-leaf ROOT) [--timeout MS]
                                                 no daemon of the cluster issues an ID
                                                 <= N once this exits 0 (a migration)
  snowflaked cluster create --config FILE [--wait MS]
                                                 vouch that the config's cluster is new: a
                                                 root made without a fence, or a daemon's
                                                 new-cluster fence lifted
  snowflaked cluster forms --config FILE [--set]
                                                 the cluster's form policy beside the
                                                 config's (exit 3: they differ); --set
                                                 makes the config's the cluster's
  snowflaked cluster fence --config FILE [--wait MS] [--timeout MS]
                                                 after ZooKeeper lost or restored data: no
                                                 ID until every earlier lease has run out,
                                                 every sequence frozen until seq raise
  snowflaked cluster export --config FILE         the cluster's definitions as JSON: every
                                                 sequence, the form policy, the floor
  snowflaked cluster import FILE --config FILE    after a loss: each sequence of an export
                                                 ZooKeeper lacks made again, frozen; the
                                                 form policy; what else to run, printed
  snowflaked seq create TAG [--start N] [--step S] --config FILE
                      [--template T] [--max N] [--reset PERIOD --time-zone ZONE]
                      [--retention D] [--frozen] [--order strict]
                                                 a dense sequence, served at GET /seq/TAG
  snowflaked seq list --config FILE [--json]      the sequences: next number, step, floor,
                                                 the newest range; each daemon's holdings
  snowflaked seq raise TAG[@PERIOD] --above N --config FILE [--timeout MS]
                                                 no daemon hands out a number <= N of TAG
                                                 once this exits 0
  snowflaked seq order TAG strict|per-daemon --config FILE [--timeout MS]
                                                 a tag's order changed; to strict: what the
                                                 daemons took before dropped, confirmed
  snowflaked seq forget RUN --config FILE [--force]
                                                 a killed daemon's holder node deleted
                                                 (written 10 min ago or more, or --force)
  snowflaked seq import --leaf-alloc FILE --config FILE [--timeout MS]
                                                 Leaf-segment's tags, each from its max_id
  snowflaked lease list --config FILE [--json]    the worker IDs leased to other processes,
                                                 every pool: holder, time fence, floor
  snowflaked lease forget WORKER_ID [--pool P] --config FILE
                                                 a lease given back without its token: its
                                                 next holder starts past its time fence
  snowflaked get [TAG] [--count N] [--form FORM] [--servers URL,...] [--cacert FILE]
                 [--timeout MS] [--json] [--seq]
                                                 IDs, one a line, from whichever replica
                                                 can issue (exit 1: none could)
  snowflaked probe [PATH] [--config FILE] [--listen ADDR] [--timeout MS]
                                                 ask this config's daemon on its listener
                                                 (loopback if it listens on every address)
                                                 for PATH (default /ready), over TLS if it
                                                 serves TLS: exit 0 on 200, else 1 (a
                                                 health check)

)" << visible_options()
      << "\nExit codes: 0 success, 1 runtime failure, 2 bad command line or config, 3 refused\n"
         "(cluster create: not a new cluster; cluster forms: the config's forms differ from the\n"
         "cluster's; seq forget: a holder node written too recently; lease forget: no lease on\n"
         "that worker ID).\n";
  return out.str();
}

Parsed parse_command_line(int argc, const char* const* argv) {
  po::options_description all = visible_options();
  all.add_options()("command", po::value<std::string>())("args",
                                                         po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("command", 1).add("args", -1);

  Options options;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(),
              options);
    po::notify(options);
  } catch (const po::error& e) {
    return std::string(e.what());
  }
  // Only the daemon stops on its own terms; every other command ends on
  // SIGTERM or Ctrl-C the usual way.
  if (options.count("help") || options.count("version") || options.count("command"))
    release_stop_signals();
  if (options.count("help")) {
    return Action([] {
      std::cout << usage_text();
      return 0;
    });
  }
  if (options.count("version")) {
    return Action([] {
      std::cout << "snowflaked " << kVersion << " (revision " << source_revision() << ")\n";
      return 0;
    });
  }
  if (!options.count("command")) return run_command(options);
  const Arguments args = options.count("args") ? options["args"].as<Arguments>() : Arguments{};
  const std::string command = options["command"].as<std::string>();
  if (command == "decode") return decode_command(options, args);
  if (command == "check-config") return check_config_command(options, args);
  if (command == "pool") return pool_command(options, args);
  if (command == "cluster") return cluster_command(options, args);
  if (command == "get") return get_command(options, args);
  if (command == "probe") return probe_command(options, args);
  if (command == "seq") return seq_command(options, args);
  if (command == "lease") return lease_command(options, args);
  return fmt::format("unknown command \"{}\"", command);
}

}  // namespace snowflake::commands
