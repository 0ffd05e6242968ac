#include "snowflake/report/pool_status.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::report {

using coord::CoordErrc;
using coord::CoordError;
using coord::decode_inuse;
using coord::decode_notuse;
using coord::InuseData;
using coord::NodeData;
using coord::OwnerToken;
using coord::recorded_floor;
using coord::worker_id_of_node;
using coord::ZkErrc;
using coord::ZkSession;
namespace tree = coord::tree;

namespace {

Result<std::vector<std::pair<std::uint32_t, NodeData>>, CoordError> read_children(
    ZkSession& zk, const std::string& dir) {
  BOOST_OUTCOME_TRY(names, zk.children(dir));
  std::vector<std::pair<std::uint32_t, NodeData>> out;
  for (const auto& name : names) {
    const auto id = worker_id_of_node(name);
    if (!id) continue;
    BOOST_OUTCOME_TRY(node, zk.try_get(tree::child(dir, name)));
    if (!node) continue;  // moved while we listed
    out.emplace_back(*id, std::move(node).value());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::string age_text(std::int64_t ms) {
  if (ms < 60'000) return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
  if (ms < 3'600'000) return fmt::format("{:.1f} min", static_cast<double>(ms) / 60'000.0);
  return fmt::format("{:.1f} h", static_cast<double>(ms) / 3'600'000.0);
}

std::string floor_text(std::int64_t ms) { return ms > 0 ? format_iso8601_ms(ms) : "none"; }

// "0-2, 4, 6-1023"
std::string ranges(const std::vector<std::uint32_t>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string_view owner_state(const PoolMember& taken, std::chrono::milliseconds reclaim_after) {
  if (!taken.owner_data) return "unknown";
  if (taken.owner_data->released) return "released";  // the reaper's next pass returns it
  if (taken.heartbeat_age_ms > reclaim_after.count()) return "reclaimable";
  if (taken.heartbeat_age_ms > taken.owner_data->lease_ms) return "lease_expired";
  return "live";
}

Result<PoolStatus, CoordError> read_pool_status(ZkSession& zk, const std::string& root,
                                                std::chrono::milliseconds reclaim_after) {
  PoolStatus status;
  status.pool = tree::pool(root);
  status.reclaim_after = reclaim_after;
  BOOST_OUTCOME_TRY(pool, zk.try_get(status.pool));
  if (!pool) {
    return CoordError{CoordErrc::zookeeper,
                      fmt::format("{} does not exist: no daemon of this config has run in "
                                  "recycle mode against this ZooKeeper yet",
                                  status.pool)};
  }
  const auto meta = nlohmann::json::parse(pool.value().data, nullptr, false);
  if (meta.is_object()) {
    status.size = meta.value("size", std::uint64_t{0});
    status.complete = meta.value("complete", false);
  }
  BOOST_OUTCOME_TRY(cluster, zk.get(root));
  const auto recorded = nlohmann::json::parse(cluster.data, nullptr, false);
  if (recorded.is_object() && recorded.contains("datacenter_id")) {
    status.datacenter_id = json_integer<std::uint32_t>(recorded.at("datacenter_id"));
  }
  status.floor = recorded_floor(cluster.data);

  BOOST_OUTCOME_TRY(now, zk.time_of_probe(tree::time_probe_prefix(root)));
  status.now_from_zookeeper = now.has_value();
  BOOST_OUTCOME_TRY(inuse, read_children(zk, tree::inuse_dir(root)));
  BOOST_OUTCOME_TRY(notuse, read_children(zk, tree::notuse_dir(root)));
  // Without ZooKeeper's time, the newest write it stamped is the best lower bound.
  std::int64_t now_ms = now.value_or(0);
  if (!now) {
    for (const auto& [id, node] : inuse) now_ms = std::max(now_ms, node.stat.mtime_ms);
  }
  status.now_ms = now_ms;

  for (auto& [id, node] : inuse) {
    PoolMember m;
    m.worker_id = id;
    m.owner_data = decode_inuse(node.data);
    if (m.owner_data) m.floor = m.owner_data->floor;
    m.last_heartbeat_ms = node.stat.mtime_ms;
    m.heartbeat_age_ms = std::max<std::int64_t>(0, now_ms - node.stat.mtime_ms);
    status.inuse.push_back(std::move(m));
  }
  for (auto& [id, node] : notuse) {
    PoolMember m;
    m.worker_id = id;
    if (const auto data = decode_notuse(node.data))
      m.floor = data->floor;
    else
      m.unusable = true;
    status.notuse.push_back(std::move(m));
  }
  return status;
}

nlohmann::ordered_json to_json(const PoolStatus& s) {
  using json = nlohmann::ordered_json;
  json inuse = json::array();
  for (const auto& m : s.inuse) {
    json e{{"worker_id", m.worker_id}, {"state", owner_state(m, s.reclaim_after)}};
    if (m.owner_data) {
      const OwnerToken& o = m.owner_data->owner;
      e["owner"] = {{"host", o.host}, {"port", o.port}, {"pid", o.pid}, {"instance", o.instance}};
      e["lease_ms"] = m.owner_data->lease_ms;
      e["hwm"] = m.owner_data->hwm > 0 ? json(format_iso8601_ms(m.owner_data->hwm)) : json(nullptr);
    } else {
      e["owner"] = nullptr;
    }
    e["last_heartbeat"] = format_iso8601_ms(m.last_heartbeat_ms);
    e["heartbeat_age_ms"] = m.heartbeat_age_ms;
    e["floor"] = m.floor > 0 ? json(format_iso8601_ms(m.floor)) : json(nullptr);
    inuse.push_back(std::move(e));
  }
  json notuse = json::array();
  for (const auto& m : s.notuse) {
    notuse.push_back({{"worker_id", m.worker_id},
                      {"floor", m.floor > 0 ? json(format_iso8601_ms(m.floor)) : json(nullptr)},
                      {"unusable", m.unusable}});
  }
  return {{"pool", s.pool},
          {"datacenter_id", s.datacenter_id ? json(*s.datacenter_id) : json(nullptr)},
          {"floor", s.floor ? json{{"above_id", std::to_string(s.floor->above_id)},
                                   {"ms", s.floor->ms},
                                   {"time", format_iso8601_ms(s.floor->ms)}}
                            : json(nullptr)},
          {"size", s.size},
          {"complete", s.complete},
          {"time", format_iso8601_ms(s.now_ms)},
          {"time_source", s.now_from_zookeeper ? "zookeeper" : "newest_heartbeat"},
          {"reclaim_after_ms", s.reclaim_after.count()},
          {"unusable", s.unusable()},
          {"inuse", std::move(inuse)},
          {"notuse", std::move(notuse)}};
}

std::size_t PoolStatus::unusable() const {
  return static_cast<std::size_t>(
      std::count_if(notuse.begin(), notuse.end(), [](const PoolMember& m) { return m.unusable; }));
}

std::string to_text(const PoolStatus& s) {
  const std::size_t unusable = s.unusable();
  std::string out = fmt::format(
      "pool {}{}: {} worker IDs{}, {} in use, {} free{}\n", s.pool,
      s.datacenter_id ? fmt::format(" (datacenter {})", *s.datacenter_id) : "", s.size,
      s.complete ? "" : " (still being filled)", s.inuse.size(), s.notuse.size() - unusable,
      unusable ? fmt::format(", {} unusable (unreadable floor: never claimed)", unusable) : "");
  if (s.floor) {
    out += fmt::format("migration floor: no ID at or below {} (its time unit starts {})\n",
                       s.floor->above_id, format_iso8601_ms(s.floor->ms));
  }
  out += fmt::format("ZooKeeper time {}{}\n", format_iso8601_ms(s.now_ms),
                     s.now_from_zookeeper
                         ? ""
                         : " (approximate: the newest heartbeat; no right to create a probe node)");
  out += "\nIN USE\n";
  out += fmt::format("  {:>6}  {:<13}  {:>13}  {:<36}  {}\n", "ID", "STATE", "HEARTBEAT AGE",
                     "OWNER", "FLOOR");
  for (const auto& m : s.inuse) {
    out += fmt::format(
        "  {:>6}  {:<13}  {:>13}  {:<36}  {}\n", m.worker_id, owner_state(m, s.reclaim_after),
        age_text(m.heartbeat_age_ms),
        m.owner_data ? m.owner_data->owner.describe() : std::string("(not snowflaked data)"),
        floor_text(m.floor));
  }
  if (s.inuse.empty()) out += "  (none)\n";
  out += "\nFREE\n";
  std::vector<std::uint32_t> never_used;
  std::vector<std::uint32_t> unreadable;
  bool header = false;
  for (const auto& m : s.notuse) {
    if (m.unusable) {
      unreadable.push_back(m.worker_id);
      continue;
    }
    if (m.floor == 0) {
      never_used.push_back(m.worker_id);
      continue;
    }
    if (!header) out += fmt::format("  {:>6}  {}\n", "ID", "FLOOR (IDs resume after)");
    header = true;
    out += fmt::format("  {:>6}  {}\n", m.worker_id, floor_text(m.floor));
  }
  if (!never_used.empty()) out += fmt::format("  never used: {}\n", ranges(never_used));
  if (!unreadable.empty()) {
    out += fmt::format("  unusable (floor unreadable, never claimed): {}\n", ranges(unreadable));
  }
  if (s.notuse.empty()) out += "  (none)\n";
  return out;
}

}  // namespace snowflake::report
