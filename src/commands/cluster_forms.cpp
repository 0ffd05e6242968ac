// snowflaked cluster forms --config FILE [--set]: the cluster's form policy
// (cluster/form_policy.hpp) beside the config's. Without --set it only reads:
// exit 0 when they agree (or the cluster records none yet, and a daemon of
// this config would record its own), 3 when a daemon of this config would
// be refused. With --set the config's forms become the cluster's: daemons
// whose forms section says otherwise refuse the tags whose form changed as
// soon as they read it (they watch the root); one cut off from ZooKeeper
// issues no ID once its lease runs out.

#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "snowflake/base/time_format.hpp"
#include "snowflake/cluster/cluster_root.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"

namespace snowflake::commands {

namespace {

int show(const std::string& root, const std::optional<FormPolicy>& recorded,
         const FormPolicy& mine) {
  std::cout << fmt::format("the cluster at {}: {}\nthis config:   {}\n", root,
                           recorded ? describe(*recorded) : "no form policy recorded yet",
                           describe(mine));
  if (!recorded) {
    std::cout << "a daemon of this config records its forms as the cluster's policy\n";
    return 0;
  }
  if (*recorded == mine) {
    std::cout << "they agree\n";
    return 0;
  }
  std::cout << "they differ: a daemon of this config does not start (exit 3); `snowflaked "
               "cluster forms --set` with this config makes them the cluster's\n";
  return kExitConflict;
}

int set(coord::ZkSession& zk, const Config& config, const FormPolicy& mine) {
  const std::string& root = config.zookeeper.root;
  // Bounded: each round writes, or saw another writer win a race.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto node = zk.get(root);
    if (!node) return fail(kExitFailure, "cannot read the root: " + node.error().message());
    const auto recorded = coord::recorded_form_policy(node.value().data);
    if (recorded && recorded.value() == mine) {
      std::cout << fmt::format("the cluster at {} already hands IDs out by this policy: {}\n", root,
                               describe(mine));
      return 0;
    }
    const auto written =
        zk.set(root, coord::with_form_policy(node.value().data, mine), node.value().stat.version);
    if (!written) {
      if (written.error().code == coord::ZkErrc::bad_version || written.error().outcome_unknown())
        continue;
      return fail(kExitFailure, "cannot record the policy: " + written.error().message());
    }
    const auto holds = std::chrono::system_clock::now() + config.coordinator.lease_timeout;
    std::cout << fmt::format(
        "the cluster at {} hands IDs out by ({}), where it was ({}).\n"
        "Daemons whose forms section says otherwise refuse each tag whose form changed (503 "
        "form_policy_changed) as soon as they read it (they watch the root), and do not start "
        "again (exit 3) until their config is this one's. A daemon cut off from ZooKeeper now "
        "reads it when it is back, and issues no ID once its lease runs out: by {} every "
        "daemon holds to it (coordinator.lease_timeout_ms from now)\n",
        root, describe(mine),
        recorded ? (recorded.value() ? describe(*recorded.value()) : "none recorded")
                 : "not a policy",
        format_iso8601_ms(
            std::chrono::duration_cast<std::chrono::milliseconds>(holds.time_since_epoch())
                .count()));
    return 0;
  }
  return fail(kExitFailure, fmt::format("{} kept changing while being written", root));
}

}  // namespace

int cluster_forms(const std::string& config_file, bool set_policy) {
  auto config = load_config(config_file);
  if (!config) return kExitUsage;
  if (config->coordinator.type == CoordinatorType::static_id) {
    return fail(kExitUsage, fmt::format("{}: coordinator.type: cluster forms needs a ZooKeeper "
                                        "cluster (sequential or recycle); a static daemon's "
                                        "forms are its config's alone",
                                        config_file));
  }
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  const std::string& root = config->zookeeper.root;
  auto node = zk->try_get(root);
  if (!node) return fail(kExitFailure, "cannot read the root: " + node.error().message());
  if (!node.value()) {
    return fail(kExitFailure, fmt::format("no cluster at {}: a daemon, or snowflaked cluster "
                                          "create, makes it (and records its config's forms)",
                                          root));
  }
  const FormPolicy mine = coord::form_policy_of(config->forms);
  const auto recorded = coord::recorded_form_policy(node.value()->data);
  if (set_policy) {
    // The rest of the config must be the cluster's (layout, strategy, key).
    if (auto checked = coord::check_cluster_root(
            *zk, root, layout_of(*config).settings(), config->coordinator.type,
            config->coordinator.datacenter_id,
            config->forms.opaque ? config->forms.opaque->fingerprint() : std::string());
        !checked) {
      return fail(checked.error().fatal() ? kExitConflict : kExitFailure, checked.error().message);
    }
    return set(*zk, *config, mine);
  }
  if (!recorded) return fail(kExitConflict, fmt::format("{}: {}", root, recorded.error()));
  return show(root, recorded.value(), mine);
}

}  // namespace snowflake::commands
