// snowflaked lease list --config FILE [--json]: the worker IDs leased to
// other processes, in the cluster's pool and every named pool: holder, time
// fence, floor.
// snowflaked lease forget WORKER_ID [--pool P] --config FILE: a lease given
// back without its token (a holder known gone): the worker ID returns to
// its pool above the lease's time fence, so whoever takes it next starts
// past anything the holder may still stamp (docs/operations.md).

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <iostream>

#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/workers/lease_pool.hpp"

namespace snowflake::commands {

namespace {

using coord::LeasePool;
using coord::LeasePoolSettings;

// The cluster's pool, or a named one as ZooKeeper records it.
Result<LeasePool, std::string> pool_of(coord::ZkSession& zk, const Config& config,
                                       const std::string& name) {
  const std::string& root = config.zookeeper.root;
  if (name.empty() || name == kClusterLeasePool) {
    const auto max_id = (std::uint32_t{1} << config.layout.worker_bits) - 1;
    return LeasePool(LeasePoolSettings{root, root, max_id, std::nullopt, {}, 0, 0});
  }
  auto record = zk.try_get(coord::tree::lease_pool(root, name));
  if (!record) return "cannot read the pool: " + record.error().message();
  if (!record.value()) return fmt::format("no lease pool \"{}\" in {}", name, root);
  const auto j = nlohmann::json::parse(record.value()->data, nullptr, false);
  const int bits = j.is_object() ? j.value("worker_bits", 0) : 0;
  if (bits < 1 || bits > kMaxLeasePoolWorkerBits) {
    return fmt::format("lease pool \"{}\": its record is unreadable", name);
  }
  return LeasePool(LeasePoolSettings::named(root, name, bits, {}));
}

int lease_list(const std::string& file, bool as_json) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  std::vector<std::string> pools{std::string(kClusterLeasePool)};
  if (auto named = zk->children(coord::tree::lease_pools_dir(config->zookeeper.root))) {
    pools.insert(pools.end(), named.value().begin(), named.value().end());
  } else if (named.error().code != coord::ZkErrc::no_node) {
    return fail(kExitFailure, "cannot read the lease pools: " + named.error().message());
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  std::string text = fmt::format("{:<24} {:>9}  {:<32} {:>15} {:>15}\n", "POOL", "WORKER_ID",
                                 "HOLDER", "FENCE_MS", "FLOOR_MS");
  for (const auto& name : pools) {
    auto pool = pool_of(*zk, *config, name);
    if (!pool) return fail(kExitFailure, pool.error());
    auto leases = pool.value().list(*zk);
    if (!leases) return fail(kExitFailure, "cannot read the leases: " + leases.error().message);
    for (const auto& l : leases.value()) {
      const std::int64_t fence = l.data.ts + l.data.lease_ms;
      out.push_back({{"pool", name},
                     {"worker_id", l.worker_id},
                     {"holder", l.data.owner.host},
                     {"granted_ms", l.data.ts},
                     {"lease_ms", l.data.lease_ms},
                     {"fence_ms", fence},
                     {"floor_ms", l.data.floor}});
      text += fmt::format("{:<24} {:>9}  {:<32} {:>15} {:>15}\n", name, l.worker_id,
                          l.data.owner.host, fence, l.data.floor);
    }
  }
  std::cout << (as_json ? out.dump(2) + "\n" : text);
  return kExitOk;
}

int lease_forget(const std::string& file, std::uint32_t worker_id, const std::string& pool_name) {
  const auto config = load_config(file);
  if (!config) return kExitUsage;
  const auto zk = connect_for_command(*config);
  if (!zk) return kExitFailure;
  auto pool = pool_of(*zk, *config, pool_name);
  if (!pool) return fail(kExitFailure, pool.error());
  auto floor = pool.value().forget(*zk, worker_id);
  if (!floor) {
    return fail(floor.error().code == coord::CoordErrc::lost ? kExitConflict : kExitFailure,
                floor.error().message);
  }
  std::cout << fmt::format(
      "worker ID {} of pool \"{}\" forgotten: its next holder starts past {} (the lease's time "
      "fence)\n",
      worker_id, pool_name.empty() ? kClusterLeasePool : pool_name, floor.value());
  return kExitOk;
}

}  // namespace

Parsed lease_command(const Options& options, const Arguments& args) {
  const auto usage = std::string("lease takes list, or forget WORKER_ID [--pool P]");
  if (args.empty() || (args[0] != "list" && args[0] != "forget")) return usage;
  if (!options.count("config")) {
    return fmt::format("lease {} needs --config FILE (ZooKeeper and root)", args[0]);
  }
  const std::string file = *config_path(options);
  if (args[0] == "list") {
    if (args.size() != 1) return usage;
    return Action([file, json = options.count("json") > 0] { return lease_list(file, json); });
  }
  std::uint32_t id = 0;
  if (args.size() != 2) return usage;
  const std::string& text = args[1];
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return fmt::format("lease forget: WORKER_ID must be a number, got \"{}\"", text);
  }
  const std::string pool = options.count("pool") ? options["pool"].as<std::string>() : "";
  return Action([file, id, pool] { return lease_forget(file, id, pool); });
}

}  // namespace snowflake::commands
