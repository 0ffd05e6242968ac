// snowflaked cluster create --config FILE: vouches that the cluster at the
// config's root is new. A daemon that finds no root makes one fenced for a
// lease (cluster/cluster_identity.hpp): a ZooKeeper that lost its data looks
// new too, and only an operator (or an install script) knows it is not.
// This makes the root unfenced, or lifts a new-cluster fence a daemon put
// up; never a fence for lost history. Exit 0 also when the cluster exists.
// It remembers the cluster in its state directory, and refuses (exit 3) one
// there that ZooKeeper lost (cluster_memory.hpp).
//
// snowflaked cluster fence --config FILE [--timeout MS]: the restore
// runbook's command (docs/operations.md, "ZooKeeper lost or restored its
// data"), run right after ZooKeeper comes back from an older copy: fences
// the cluster (no worker ID issues an ID until every lease from before the
// restore has run out), freezes every sequence until `seq raise`, then
// waits until every owner of a worker ID that may issue has confirmed the
// fence. It prints what the daemons report of each sequence.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "cluster_memory.hpp"
#include "floor_confirmations.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"

namespace snowflake::commands {

namespace {

struct ClusterOptions {
  std::string config_file;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> wait;  // for ZooKeeper to answer
};

std::string who(std::string_view command) {
  char host[256] = {};
  const bool named = ::gethostname(host, sizeof host - 1) == 0 && *host;
  return fmt::format("snowflaked cluster {} on {} (pid {})", command, named ? host : "localhost",
                     ::getpid());
}

// The config, for a command on its cluster; nullopt: printed why (exit 2).
// `static_sequences`: a static config whose daemons serve sequences is one
// too (cluster fence freezes them).
std::optional<Config> cluster_config(const ClusterOptions& options, std::string_view command,
                                     bool static_sequences = false) {
  auto config = load_config(options.config_file);
  if (!config) return std::nullopt;
  if (static_sequences && config->coordinator.type == CoordinatorType::static_id &&
      !config->sequences.enabled) {
    fail(kExitUsage,
         fmt::format("{}: sequences.enabled: cluster {} on a static config fences its sequences; "
                     "these daemons serve none (static worker IDs come from the config)",
                     options.config_file, command));
    return std::nullopt;
  }
  if (!static_sequences && config->coordinator.type == CoordinatorType::static_id) {
    fail(kExitUsage, fmt::format("{}: coordinator.type: cluster {} needs a ZooKeeper cluster "
                                 "(sequential or recycle); static mode has none",
                                 options.config_file, command));
    return std::nullopt;
  }
  return config;
}

// The root checked against the config as a daemon would check it; with
// `forms`, the config's form policy recorded with a root made new (create;
// on a cluster that runs, `cluster forms` is the command for it), never
// compared: create and fence are not held up by a forms section.
Result<coord::RootCheck, coord::CoordError> check_root(coord::ZkSession& zk, const Config& config,
                                                       const coord::RootIdentity& identity,
                                                       bool forms) {
  return coord::check_cluster_root(
      zk, config.zookeeper.root, layout_of(config).settings(), config.coordinator.type,
      config.coordinator.datacenter_id,
      config.forms.opaque ? config.forms.opaque->fingerprint() : std::string(), identity,
      forms ? std::optional(coord::RootForms{coord::form_policy_of(config.forms), false})
            : std::nullopt);
}

int exit_code_of(const coord::CoordError& e) { return e.fatal() ? kExitConflict : kExitFailure; }

std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One session on each server of zookeeper.hosts (a chroot suffix kept), its
// ID; a server that does not answer within a second is left out (its
// daemons wait the restore grace).
std::vector<std::int64_t> sessions_on_each_server(const Config& config) {
  const std::string& hosts = config.zookeeper.hosts;
  const auto slash = hosts.find('/');
  const std::string chroot = slash == std::string::npos ? std::string() : hosts.substr(slash);
  const std::string list = hosts.substr(0, slash);
  std::vector<std::int64_t> sessions;
  for (std::size_t from = 0; from <= list.size();) {
    const auto comma = std::min(list.find(',', from), list.size());
    if (comma > from) {
      auto settings = zookeeper_settings(config);
      settings.hosts = list.substr(from, comma - from) + chroot;
      settings.connect_timeout =
          std::min(settings.connect_timeout, std::chrono::milliseconds(1000));
      if (auto session = coord::ZkSession::connect(settings)) {
        sessions.push_back(session.value()->session_id());
      }
    }
    from = comma + 1;
  }
  return sessions;
}

int cluster_create(const ClusterOptions& options) {
  const auto config = cluster_config(options, "create");
  if (!config) return kExitUsage;
  auto deadline = BootClock::now() + options.wait.value_or(config->zookeeper.connect_timeout);
  const auto zk = connect_for_command(*config, options.wait);
  if (!zk) return kExitFailure;
  // Its steps are asked again while an answer is lost (a new ensemble
  // settling), as cluster fence's are: each may run twice.
  deadline = std::max(deadline, BootClock::now() + 2 * config->zookeeper.session_timeout);
  const std::string& root = config->zookeeper.root;
  // This host has been part of the cluster at this root (its daemon, or an
  // earlier run of this command, recorded it): if ZooKeeper has lost it, it
  // is not new.
  if (const auto verdict = judge_by_memory(*zk, *config); verdict.failure) {
    return fail(kExitFailure, *verdict.failure);
  } else if (verdict.conflict) {
    return fail(kExitConflict, *verdict.conflict);
  }
  // A session on every server it reaches, before the root is made or its
  // fence lifted: each server numbers its own clients' sessions by its own
  // run, and the vouch reaches the daemons of those runs (cluster_vouch.hpp).
  coord::ClusterVouch vouch{{zk->session_id()}, wall_now_ms()};
  for (const std::int64_t session : sessions_on_each_server(*config)) {
    vouch.sessions.push_back(session);
  }
  auto checked = until_answered(deadline, [&] {
    return check_root(*zk, *config, {std::nullopt, {}, who("create"), /*vouched=*/true, vouch},
                      /*forms=*/true);
  });
  if (!checked) return fail(exit_code_of(checked.error()), checked.error().message);
  const std::string& id = checked.value().cluster_id;
  std::string said;
  if (checked.value().outcome == coord::RootOutcome::created) {
    said = fmt::format("created the cluster {} at {}", id, root);
  } else {
    auto lifted =
        until_answered(deadline, [&] { return coord::lift_new_cluster_fence(*zk, root, vouch); });
    if (!lifted) {
      return fail(
          lifted.error().code == coord::CoordErrc::history_lost ? kExitConflict : kExitFailure,
          lifted.error().message);
    }
    said = lifted.value() == coord::Lifted::none
               ? fmt::format("the cluster {} exists at {}: nothing to do", id, root)
               : fmt::format("the cluster {} at {} is new: its fence is lifted", id, root);
  }
  // What the root says now: ours is in it only where it was written (an
  // empty root node we found, or a root made by a daemon before this run,
  // is not vouched for; a write whose answer was lost may be).
  auto now = until_answered(deadline, [&] { return zk->get(root); });
  const auto recorded = now ? coord::recorded_vouch(now.value().data) : std::nullopt;
  if (recorded && recorded->sessions == vouch.sessions) {
    std::set<std::uint64_t> runs;
    for (const std::int64_t session : vouch.sessions) {
      runs.insert(static_cast<std::uint64_t>(session) >> 16);
    }
    said += fmt::format(
        "; daemons that reach one of {} ZooKeeper server(s) before it restarts, within {} min, "
        "issue without coordinator.restore_grace_ms",
        runs.size(), std::chrono::duration_cast<std::chrono::minutes>(coord::kVouchLasts).count());
  }
  std::cout << said << "\n";
  const auto memory = remember_cluster(*config, id);
  if (!memory.said.empty()) std::cout << memory.said << "\n";
  if (!memory.warning.empty()) std::cerr << "warning: " << memory.warning << "\n";
  return kExitOk;
}

// Each frozen sequence, with what its node and the daemons' holder nodes
// say of the numbers that may have gone out. False when either could not
// be read: then no N is suggested (one from half the records would be too
// low), and the command fails.
bool report_sequences(coord::ZkSession& zk, const std::string& root,
                      const std::vector<std::string>& tags, BootClock::time_point deadline) {
  if (tags.empty()) return true;
  auto holders = until_answered(deadline, [&] { return coord::read_holders(zk, root); });
  if (!holders) {
    std::cerr << fmt::format(
        "error: cannot read the daemons' holder nodes ({}): what each sequence handed out is "
        "not known; run the command again\n",
        holders.error().message);
    return false;
  }
  std::cout << fmt::format(
      "{} sequence(s) frozen (503 sequence_frozen) until each is raised past every number it "
      "handed out:\n",
      tags.size());
  bool whole = true;
  for (const auto& tag : tags) {
    auto read = until_answered(deadline, [&] { return coord::read_sequence(zk, root, tag); });
    std::int64_t above = 0;
    std::string line = fmt::format("  {}:", tag);
    if (read) {
      above = read.value().node.next - 1;
      line += fmt::format(" its node (as restored) takes next from {};", read.value().node.next);
    } else if (read.error().code == coord::CoordErrc::unusable) {
      // Not a sequence's data (freeze_sequences leaves it too): said, and
      // nothing to raise.
      std::cout << line
                << fmt::format(" not a sequence's node ({}): left alone\n", read.error().message);
      continue;
    } else if (read.error().code != coord::CoordErrc::no_sequence) {
      std::cout << line
                << fmt::format(" its node could not be read ({}): run the command again\n",
                               read.error().message);
      whole = false;
      continue;
    }
    {
      for (const auto& h : holders.value()) {
        if (!h.record) continue;
        const auto held = h.record->tags.find(tag);
        if (held == h.record->tags.end()) continue;
        above = std::max(above, held->second.to - 1);
        line += fmt::format(" run {} ({}) held [{}, {}) (written {});", h.run, h.record->owner,
                            held->second.from, held->second.to, format_iso8601_ms(h.written_ms));
      }
    }
    std::cout << line
              << fmt::format(
                     "\n    snowflaked seq raise {} --above N --config FILE, N the "
                     "largest of {} and the largest {} in your data\n",
                     tag, above, tag);
  }
  return whole;
}

// Static mode: no worker ID comes from ZooKeeper, so nothing to fence but
// the sequences, each frozen until seq raise lifts it past what went out.
int fence_static_sequences(const Config& config, coord::ZkSession& zk,
                           BootClock::time_point deadline) {
  const std::string& root = config.zookeeper.root;
  auto frozen = until_answered(deadline, [&] { return coord::freeze_sequences(zk, root); });
  if (!frozen) {
    return fail(kExitFailure, "cannot freeze the sequences: " + frozen.error().message);
  }
  std::cout << fmt::format(
      "static mode: worker IDs come from the config, and only the sequences at {} are fenced\n",
      root);
  if (!report_sequences(zk, root, frozen.value(), deadline)) return kExitFailure;
  return kExitOk;
}

int cluster_fence(const ClusterOptions& options) {
  const auto config = cluster_config(options, "fence", /*static_sequences=*/true);
  if (!config) return kExitUsage;
  // Each step is asked again while its answer is lost (an ensemble's
  // election, a server that failed) for as long as --wait lets the command
  // reach ZooKeeper at all: a fence given up on half-way leaves the daemons
  // free to reconnect to a restored ZooKeeper unfenced.
  auto deadline = BootClock::now() + options.wait.value_or(config->zookeeper.connect_timeout);
  const auto zk = connect_for_command(*config, options.wait);
  if (!zk) return kExitFailure;
  // A ZooKeeper that answered at the end of a long --wait (a restore) still
  // gets its election's worth of patience for each step.
  deadline = std::max(deadline, BootClock::now() + 2 * config->zookeeper.session_timeout);
  if (config->coordinator.type == CoordinatorType::static_id) {
    return fence_static_sequences(*config, *zk, deadline);
  }
  const std::string& root = config->zookeeper.root;
  const auto length = coord::fence_length(config->coordinator);
  const std::string reason =
      fmt::format("ZooKeeper was restored or lost data; fenced by {}", who("fence"));
  // A root the restored copy does not have is made fenced, under the ID
  // the state directory records (cluster create's, or a daemon's): the
  // daemons that knew it find their cluster, fenced. A daemon stopped
  // through the event and started days later would otherwise find the
  // root "replaced", fence again and freeze every sequence again, undoing
  // the raises already made. With no record, a new ID: the daemons that
  // knew the old one find it replaced, and fence too. A root the copy has
  // is checked against the config, then fenced.
  auto there = until_answered(deadline, [&] { return zk->exists(root); });
  if (!there) return fail(kExitFailure, "cannot read the root: " + there.error().message());
  coord::RootIdentity identity{std::nullopt, {}, who("fence"), false};
  std::optional<std::string> remembered;
  if (!there.value()) {
    auto known = remembered_cluster_id(*config);
    if (!known) return fail(kExitFailure, known.error());
    remembered = known.value();
    identity = {remembered.value_or(coord::new_cluster_id()), length, who("fence"), false};
  }
  auto checked =
      until_answered(deadline, [&] { return check_root(*zk, *config, identity, /*forms=*/false); });
  if (!checked) return fail(exit_code_of(checked.error()), checked.error().message);
  if (!there.value()) {
    std::cout << (remembered
                      ? fmt::format("made the root again as the cluster {} that {}/cluster.json "
                                    "records\n",
                                    *remembered, state_dir_of(*config))
                      : fmt::format("made the root again as a new cluster {}: no "
                                    "cluster.json in {} records one at {}\n",
                                    checked.value().cluster_id, state_dir_of(*config), root));
    const auto memory = remember_cluster(*config, checked.value().cluster_id);
    if (!memory.warning.empty()) std::cerr << "warning: " << memory.warning << "\n";
  }
  auto fence = until_answered(deadline, [&] {
    return coord::raise_fence(*zk, root, {coord::FenceKind::history_lost, length, reason});
  });
  if (!fence) return fail(kExitFailure, "cannot fence the cluster: " + fence.error().message);
  std::cout << fmt::format(
      "the cluster {} at {} is fenced until {} (ZooKeeper's time): no worker ID issues an ID "
      "until then\n",
      checked.value().cluster_id, root, format_iso8601_ms(fence.value().until_ms));
  auto frozen = until_answered(deadline, [&] { return coord::freeze_sequences(*zk, root); });
  if (!frozen) {
    return fail(kExitFailure, "cannot freeze the sequences: " + frozen.error().message);
  }
  // The confirmations are waited for whatever the report said: a fence run
  // again only to finish a report would be pushed later.
  const bool reported = report_sequences(*zk, root, frozen.value(), deadline);
  const int confirmed = await_floor_confirmations(
      *zk, *config, fence.value().until_ms, options.timeout,
      fmt::format("confirmed: every daemon that may issue honours the fence until {}",
                  format_iso8601_ms(fence.value().until_ms)));
  if (confirmed == kExitOk && !reported) {
    return fail(kExitFailure,
                "the fence is confirmed, but what some sequences handed out was not read (above): "
                "run seq list, and raise each above what it shows and your data");
  }
  return confirmed;
}

}  // namespace

Parsed cluster_command(const Options& options, const Arguments& args) {
  if (args.size() == 2 && args[0] == "import") {
    if (!options.count("config")) return std::string("cluster import needs --config FILE");
    if (options.count("set") || options.count("wait") || options.count("timeout")) {
      return std::string("cluster import takes FILE and --config FILE only");
    }
    return Action(
        [file = *config_path(options), from = args[1]] { return cluster_import(file, from); });
  }
  if (args.size() != 1 ||
      (args[0] != "create" && args[0] != "fence" && args[0] != "forms" && args[0] != "export")) {
    return std::string(
        "cluster takes one subcommand: create, fence, forms, export, or import FILE");
  }
  if (!options.count("config")) {
    return fmt::format("cluster {} needs --config FILE (ZooKeeper and root)", args[0]);
  }
  ClusterOptions o{*config_path(options), std::nullopt, std::nullopt};
  if (options.count("timeout")) {
    o.timeout = std::chrono::milliseconds(options["timeout"].as<std::uint32_t>());
  }
  if (options.count("wait")) {
    o.wait = std::chrono::milliseconds(options["wait"].as<std::uint32_t>());
  }
  if (args[0] == "export") {
    if (options.count("set") || options.count("wait") || options.count("timeout")) {
      return std::string("cluster export takes --config FILE only");
    }
    return Action([file = o.config_file] { return cluster_export(file); });
  }
  if (args[0] == "forms") {
    const bool set = options.count("set") > 0;
    return Action([o, set] { return cluster_forms(o.config_file, set); });
  }
  if (options.count("set")) return std::string("--set is for cluster forms");
  if (args[0] == "create") return Action([o] { return cluster_create(o); });
  return Action([o] { return cluster_fence(o); });
}

}  // namespace snowflake::commands
