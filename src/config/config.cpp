#include "snowflake/config/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>

#include "config_parts.hpp"
#include "json_section.hpp"
#include "snowflake/base/error_text.hpp"
#include "snowflake/base/listen_address.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/ids/text.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/sequences/buffer.hpp"

namespace snowflake {

namespace {

constexpr int kReserveIntervals = CoordinatorSettings::kReserveIntervals;
constexpr std::int64_t kMaxWaitMs = 60'000;
constexpr std::uint32_t kDefaultRandomSequenceBound = 64;
constexpr int kMaxPoolWorkerBits = 16;
// A config is sections of keys, a few levels deep (forms.by_tag.<tag>).
constexpr int kMaxConfigDepth = 32;

std::int64_t read_epoch(JsonSection& layout, std::int64_t fallback) {
  const auto& v = layout.raw("epoch");
  if (v.is_null()) return fallback;
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    if (auto ms = parse_iso8601_ms(v.get<std::string>())) return *ms;
  }
  layout.fail("epoch", fmt::format("must be a UTC time such as \"2025-01-01T00:00:00Z\" or "
                                   "Unix milliseconds, got {}",
                                   v.dump()));
}

// The layout keys a preset sets, all of them.
constexpr std::array kPresetKeys = {"time_bits",     "datacenter_bits", "worker_bits",
                                    "sequence_bits", "time_unit_ms",    "epoch",
                                    "order"};

std::string preset_names() {
  std::string names;
  for (const auto& p : layout_presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

LayoutSettings read_layout(JsonSection layout) {
  const std::string preset_name = layout.string("preset", "");
  if (!preset_name.empty()) {
    const auto preset = find_layout_preset(preset_name);
    if (!preset) {
      layout.fail("preset",
                  fmt::format("must be one of {}, got \"{}\"", preset_names(), preset_name));
    }
    // A preset is the other system's whole layout: a key set beside it would
    // quietly make it another layout, whose IDs the other system never made.
    for (const char* key : kPresetKeys) {
      if (const auto& v = layout.raw(key); !v.is_null()) {
        layout.fail(key, fmt::format("is set ({}) and so is layout.preset \"{}\", which sets every "
                                     "layout key: keep one of the two",
                                     v.dump(), preset_name));
      }
    }
    layout.finish();
    return *preset;
  }
  const LayoutSettings d;
  LayoutSettings s;
  // Wide integer ranges here: IdLayout::create owns the real limits and its
  // messages, so they are not written twice.
  const auto bits = [&](const char* key, int fallback) {
    return static_cast<int>(layout.integer(key, fallback, std::numeric_limits<int>::min(),
                                           std::numeric_limits<int>::max()));
  };
  s.time_bits = bits("time_bits", d.time_bits);
  s.datacenter_bits = bits("datacenter_bits", d.datacenter_bits);
  s.worker_bits = bits("worker_bits", d.worker_bits);
  s.sequence_bits = bits("sequence_bits", d.sequence_bits);
  s.time_unit_ms =
      layout.integer("time_unit_ms", d.time_unit_ms, std::numeric_limits<std::int64_t>::min(),
                     std::numeric_limits<std::int64_t>::max());
  s.epoch_ms = read_epoch(layout, d.epoch_ms);
  s.order = *parse_field_order(layout.choice("order", std::string(to_string(d.order)),
                                             {kOrderSequenceLow, kOrderSequenceHigh}));
  layout.finish();
  return s;
}

GeneratorOptions read_generator(JsonSection gen, const IdLayout& layout) {
  const GeneratorOptions d;
  GeneratorOptions g;
  g.max_backward_wait = std::chrono::milliseconds(
      gen.integer("max_backward_wait_ms", d.max_backward_wait.count(), 0, kMaxWaitMs));
  g.max_floor_wait = std::chrono::milliseconds(
      gen.integer("max_floor_wait_ms", d.max_floor_wait.count(), 0, kMaxWaitMs));
  const std::string start = gen.choice("sequence_start", "zero", {"zero", "random"});
  g.sequence_start = start == "random" ? SequenceStart::random : SequenceStart::zero;
  const std::int64_t capacity = std::int64_t{layout.max_sequence()} + 1;
  g.random_sequence_bound = static_cast<std::uint32_t>(
      gen.integer("random_sequence_bound",
                  std::min<std::int64_t>(kDefaultRandomSequenceBound, capacity), 1, capacity));
  gen.finish();
  return g;
}

// Most keys must exceed zero; no wait in here is reasonably over a day.
constexpr std::int64_t kMaxDurationMs = 86'400'000;

// With datacenter bits the datacenter ID is required: two datacenters that
// both fell back to 0 would share every ID. Without them it has no field.
std::uint32_t read_datacenter_id(JsonSection& coord, const IdLayout& layout) {
  const auto& datacenter = coord.raw("datacenter_id");
  if (layout.settings().datacenter_bits == 0) {
    if (!datacenter.is_null()) {
      coord.fail("datacenter_id",
                 "the layout has no datacenter field (layout.datacenter_bits is "
                 "0): set layout.datacenter_bits too, or remove this key");
    }
    return 0;
  }
  if (datacenter.is_null()) {
    coord.fail("datacenter_id",
               fmt::format("is required with layout.datacenter_bits {}: a number from 0 to {}, "
                           "assigned once per datacenter (two datacenters on one number issue "
                           "the same IDs)",
                           layout.settings().datacenter_bits, layout.max_datacenter_id()));
  }
  return static_cast<std::uint32_t>(
      coord.integer("datacenter_id", 0, 0, layout.max_datacenter_id()));
}

// Static mode's migration floor: an ID, as a number or the same as a string.
std::optional<std::uint64_t> read_min_id(JsonSection& coord, CoordinatorType type) {
  const auto& min_id = coord.raw("min_id");
  if (min_id.is_null()) return std::nullopt;
  if (type != CoordinatorType::static_id) {
    coord.fail("min_id", fmt::format("is for static mode; a {} cluster keeps its floor in "
                                     "ZooKeeper, for all its daemons: snowflaked pool floor "
                                     "--above-id N",
                                     type));
  }
  std::optional<std::uint64_t> id;
  if (min_id.is_number_unsigned() ||
      (min_id.is_number_integer() && min_id.get<std::int64_t>() >= 0)) {
    id = parse_id(std::to_string(min_id.get<std::uint64_t>()));
  } else if (min_id.is_string()) {
    id = parse_id(min_id.get<std::string>());
  }
  if (!id) {
    coord.fail("min_id", fmt::format("must be an ID ({}; a number or the same as a string), got {}",
                                     kIdTextForm, min_id.dump()));
  }
  return id;
}

std::string read_advertise(JsonSection& coord, const std::string& fallback) {
  std::string advertise = coord.string("advertise", fallback);
  if (!advertise.empty()) {
    const auto colon = advertise.rfind(':');
    // An IPv6 host in brackets ("[fd00::1]:8080"), as a URL needs it: the
    // owner_url other daemons and clients are sent to is made from it.
    const std::string host = colon == std::string::npos ? "" : advertise.substr(0, colon);
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    const bool ok =
        colon != std::string::npos && colon > 0 && colon + 1 < advertise.size() &&
        advertise.find('/') == std::string::npos &&
        (bracketed || host.find_first_of(":[]") == std::string::npos) &&
        advertise.substr(colon + 1).find_first_not_of("0123456789") == std::string::npos;
    if (!ok) {
      coord.fail("advertise", fmt::format("must be \"host:port\" (an IPv6 host in brackets: "
                                          "\"[fd00::1]:8080\"), got \"{}\"",
                                          advertise));
    }
  }
  return advertise;
}

// The lease's timings and the state file's, and the rules between them that
// safety rests on (docs/design.md, "Why two daemons never issue the same ID").
void read_timings(JsonSection& coord, CoordinatorSettings& c) {
  const CoordinatorSettings d;
  const auto ms = [&](const char* key, std::chrono::milliseconds fallback, std::int64_t min) {
    return std::chrono::milliseconds(coord.integer(key, fallback.count(), min, kMaxDurationMs));
  };
  c.heartbeat_interval = ms("heartbeat_interval_ms", d.heartbeat_interval, 10);
  c.lease_timeout = ms("lease_timeout_ms", d.lease_timeout, 10);
  c.reclaim_after = ms("reclaim_after_ms", d.reclaim_after, 10);
  c.safety_margin = ms("safety_margin_ms", d.safety_margin, 0);
  c.max_skew = ms("max_skew_ms", d.max_skew, 1);
  c.max_boot_wait = ms("max_boot_wait_ms", d.max_boot_wait, 0);
  c.persist_interval = ms("persist_interval_ms", d.persist_interval, 10);
  if (c.persist_interval > std::chrono::milliseconds(1'000)) {
    coord.fail(
        "persist_interval_ms",
        fmt::format("must be at most 1000: the state file reserves {} intervals ahead, which "
                    "an immediate restart after a crash waits out",
                    kReserveIntervals));
  }
  // After kill -9 the restart's floor is the state file's reservation, up to
  // kReserveIntervals persist intervals ahead: the boot wait must cover it,
  // or every restart would give its worker ID away instead of taking it back.
  if (kReserveIntervals * c.persist_interval > c.max_boot_wait) {
    coord.fail("max_boot_wait_ms",
               fmt::format("must be at least {} x persist_interval_ms ({} > {}): after a crash the "
                           "state file's reservation, that far ahead, is the restart's floor",
                           kReserveIntervals, kReserveIntervals * c.persist_interval.count(),
                           c.max_boot_wait.count()));
  }
  if (c.heartbeat_interval >= c.lease_timeout) {
    coord.fail("heartbeat_interval_ms",
               fmt::format("must be less than lease_timeout_ms ({} >= {}): a lease must outlive "
                           "the wait for the next heartbeat",
                           c.heartbeat_interval.count(), c.lease_timeout.count()));
  }
  // A heartbeat over a new connection extends no lease until the grace is
  // over: a running lease must outlast a reconnection's grace and the
  // heartbeat after it, or every ZooKeeper restart would stop the service.
  // Unset, it is 2 s, or half what a lease leaves after a heartbeat if that
  // is less (a config with short leases, written before the key, still
  // starts).
  const auto room = c.lease_timeout - c.heartbeat_interval;
  c.restore_grace = ms("restore_grace_ms",
                       std::clamp(room / 2, std::chrono::milliseconds(0), d.restore_grace), 0);
  if (c.restore_grace >= room) {
    coord.fail("restore_grace_ms",
               fmt::format("must be less than lease_timeout_ms - heartbeat_interval_ms ({} >= {} "
                           "- {}): a lease must outlast a reconnection's grace and the heartbeat "
                           "after it",
                           c.restore_grace.count(), c.lease_timeout.count(),
                           c.heartbeat_interval.count()));
  }
  if (c.lease_timeout + c.safety_margin > c.reclaim_after) {
    coord.fail(
        "reclaim_after_ms",
        fmt::format("must be at least lease_timeout_ms + safety_margin_ms ({} + {} > {}): "
                    "an owner must stop issuing before others may reclaim its worker ID",
                    c.lease_timeout.count(), c.safety_margin.count(), c.reclaim_after.count()));
  }
}

CoordinatorSettings read_coordinator(JsonSection coord, const IdLayout& layout) {
  const CoordinatorSettings d;
  CoordinatorSettings c;
  c.type = *parse_coordinator_type(
      coord.choice("type", std::string(to_string(d.type)), {"static", "sequential", "recycle"}));
  c.static_worker_id = static_cast<std::uint32_t>(
      coord.integer("static_worker_id", d.static_worker_id, 0, layout.max_worker_id()));
  c.datacenter_id = read_datacenter_id(coord, layout);
  c.state_dir = coord.string("state_dir", d.state_dir);
  c.min_id = read_min_id(coord, c.type);
  c.advertise = read_advertise(coord, d.advertise);
  read_timings(coord, c);
  coord.finish();
  return c;
}

// The digest identity "user:password", from the first line of `path`.
std::string read_auth_file(JsonSection& zk, const std::string& path) {
  std::string line = read_secret_line(zk, "auth_file", path);
  const auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == line.size()) {
    zk.fail("auth_file", fmt::format("\"{}\" must hold \"user:password\" on its first line", path));
  }
  return line;
}

ZooKeeperSettings read_zookeeper(JsonSection zk, const std::string& service,
                                 const std::string& credentials_directory) {
  const ZooKeeperSettings d;
  ZooKeeperSettings z;
  z.hosts = zk.string("hosts", d.hosts);
  if (z.hosts.empty()) zk.fail("hosts", "must name at least one \"host:port\"");
  // A chroot suffix ("host:port/path") would make libzookeeper_mt free each
  // path of a multi twice on a dead session; zookeeper.root does its job.
  if (const auto slash = z.hosts.find('/'); slash != std::string::npos) {
    zk.fail("hosts", fmt::format("takes no chroot suffix (\"{}\"): put the path in zookeeper.root",
                                 z.hosts.substr(slash)));
  }
  z.root = zk.string("root", "/snowflake/" + service);
  if (z.root.size() < 2 || z.root.front() != '/' || z.root.back() == '/' ||
      z.root.find("//") != std::string::npos) {
    zk.fail("root", fmt::format("must be an absolute ZooKeeper path such as \"/snowflake/{}\", "
                                "got \"{}\"",
                                service, z.root));
  }
  z.session_timeout = std::chrono::milliseconds(
      zk.integer("session_timeout_ms", d.session_timeout.count(), 100, 600'000));
  z.connect_timeout = std::chrono::milliseconds(
      zk.integer("connect_timeout_ms", d.connect_timeout.count(), 100, 600'000));
  // A relative name is a systemd credential's (LoadCredential=), when the
  // daemon runs with some: DynamicUser= cannot read a file only root may.
  z.auth_file = secret_path(zk.string("auth_file", d.auth_file), credentials_directory);
  if (!z.auth_file.empty()) z.digest_auth = read_auth_file(zk, z.auth_file);
  zk.finish();
  return z;
}

HttpSettings read_http(JsonSection http, const std::string& credentials_directory) {
  const HttpSettings d;
  HttpSettings h;
  h.listen = http.string("listen", d.listen);
  if (!parse_listen_address(h.listen)) {
    http.fail("listen", fmt::format("must be {}, got \"{}\"", kListenAddressForm, h.listen));
  }
  h.io_threads = static_cast<unsigned>(http.integer("io_threads", d.io_threads, 0, 1024));
  h.max_batch = static_cast<std::uint32_t>(http.integer("max_batch", d.max_batch, 1, 1'000'000));
  h.max_connections =
      static_cast<std::uint32_t>(http.integer("max_connections", d.max_connections, 1, 1'000'000));
  const auto ms = [&](const char* key, std::chrono::milliseconds fallback) {
    return std::chrono::milliseconds(http.integer(key, fallback.count(), 1, 3'600'000));
  };
  h.idle_timeout = ms("idle_timeout_ms", d.idle_timeout);
  h.request_timeout = ms("request_timeout_ms", d.request_timeout);
  h.drain_timeout = ms("drain_timeout_ms", d.drain_timeout);
  h.shutdown_delay = std::chrono::milliseconds(
      http.integer("shutdown_delay_ms", d.shutdown_delay.count(), 0, 600'000));
  h.tag_allowlist =
      http.string_list("tag_allowlist", is_valid_name, "a tag ([A-Za-z0-9._-]{1,64}, not . or ..)");
  h.max_metric_tags =
      static_cast<std::uint32_t>(http.integer("max_metric_tags", d.max_metric_tags, 0, 100'000));
  h.leaf_compat = http.boolean("leaf_compat", d.leaf_compat);
  read_admin(http, h, credentials_directory);
  read_tls(http, h, credentials_directory);
  http.finish();
  return h;
}

SequenceSettings read_sequences(JsonSection seq) {
  const SequenceSettings d;
  SequenceSettings q;
  if (!seq.raw("enabled").is_null()) q.enabled = seq.boolean("enabled", true);
  q.segment_duration = std::chrono::seconds(
      seq.integer("segment_duration_s", d.segment_duration.count(), 1, 86'400));
  q.max_step = seq.integer("max_step", d.max_step, 1, kMaxSequenceRange);
  q.refill_at_percent =
      static_cast<std::uint32_t>(seq.integer("refill_at_percent", d.refill_at_percent, 1, 90));
  q.max_wait = std::chrono::milliseconds(seq.integer("max_wait_ms", d.max_wait.count(), 0, 60'000));
  q.max_tags = static_cast<std::uint32_t>(seq.integer("max_tags", d.max_tags, 1, 100'000));
  seq.finish();
  return q;
}

LeaseSettings read_leases(JsonSection leases, const CoordinatorSettings& coordinator,
                          std::int64_t pool_size) {
  const LeaseSettings d;
  LeaseSettings l;
  l.enabled = leases.boolean("enabled", d.enabled);
  l.min_duration = std::chrono::milliseconds(
      leases.integer("min_duration_ms", d.min_duration.count(), 100, kMaxDurationMs));
  // A holder's lease must end, with the margin and the skew bound, before
  // the reaper may take its worker ID back (DESIGN.md rule 10), and within
  // the fence a wipe or a new cluster raises (cluster_identity.hpp's
  // fence_length: lease_timeout + safety_margin + max_skew).
  const auto room = coordinator.reclaim_after - coordinator.safety_margin - coordinator.max_skew;
  const auto fallback =
      std::max(std::chrono::milliseconds(0), std::min(coordinator.lease_timeout, room));
  l.max_duration = std::chrono::milliseconds(
      leases.integer("max_duration_ms", fallback.count(), 0, kMaxDurationMs));
  l.reserved_worker_ids = static_cast<std::uint32_t>(
      leases.integer("reserved_worker_ids", pool_size / 8, 0, pool_size - 1));
  l.new_pools = leases.boolean("new_pools", d.new_pools);
  constexpr int kWidest = kMaxLeasePoolWorkerBits;
  l.new_pool_max_worker_bits = static_cast<int>(
      leases.integer("new_pool_max_worker_bits", d.new_pool_max_worker_bits, 1, kWidest));
  l.max_pools = static_cast<std::uint32_t>(leases.integer("max_pools", d.max_pools, 1, 256));
  const auto& pools = leases.raw("pools");
  if (!pools.is_null() && !pools.is_object()) {
    leases.fail("pools", "must be an object of name: {\"worker_bits\": N}");
  }
  JsonSection by_name = leases.section("pools");
  if (pools.is_object()) {
    for (const auto& [name, value] : pools.items()) {
      if (!is_valid_name(name) || name == kClusterLeasePool) {
        by_name.fail(name, fmt::format("is not a pool name ([A-Za-z0-9._-]{{1,64}}, not . or .., "
                                       "not \"{}\": the cluster's own)",
                                       kClusterLeasePool));
      }
      if (!value.is_object()) by_name.fail(name, "must be an object: {\"worker_bits\": N}");
      JsonSection pool = by_name.section(name);
      if (pool.raw("worker_bits").is_null()) {
        pool.fail("worker_bits", "is required: the pool's worker ID bits (1 to 16)");
      }
      l.pools[name] = static_cast<int>(pool.integer("worker_bits", 0, 1, kMaxLeasePoolWorkerBits));
      pool.finish();
    }
  }
  by_name.finish();
  leases.finish();
  if (l.pools.size() > l.max_pools) {
    leases.fail("max_pools", fmt::format("must be at least the pools named in leases.pools ({})",
                                         l.pools.size()));
  }
  if (!l.enabled) return l;
  if (l.max_duration > coordinator.lease_timeout) {
    leases.fail("max_duration_ms",
                fmt::format("must be at most coordinator.lease_timeout_ms ({} > {}): the fence a "
                            "wipe of ZooKeeper raises outlasts a lease no longer than the daemons'",
                            l.max_duration.count(), coordinator.lease_timeout.count()));
  }
  if (l.max_duration > room) {
    leases.fail("max_duration_ms",
                fmt::format("must be at most coordinator.reclaim_after_ms - safety_margin_ms - "
                            "max_skew_ms ({} > {}): a holder must stop before the reaper may take "
                            "its worker ID back",
                            l.max_duration.count(), room.count()));
  }
  if (l.max_duration < l.min_duration) {
    leases.fail("max_duration_ms", fmt::format("must be at least min_duration_ms ({} < {})",
                                               l.max_duration.count(), l.min_duration.count()));
  }
  if (coordinator.type != CoordinatorType::recycle) {
    leases.fail("enabled", fmt::format("needs coordinator.type \"recycle\": leases are the "
                                       "recycle pool's worker IDs, got \"{}\"",
                                       to_string(coordinator.type)));
  }
  return l;
}

Config read_config(const nlohmann::json& document, std::int64_t now_ms,
                   const std::string& credentials_directory) {
  JsonSection root(document, "");
  Config c;
  c.service = root.string("service", c.service);
  // The service name becomes a ZooKeeper path element and a metrics label.
  if (!is_valid_name(c.service)) {
    root.fail("service", fmt::format("must match [A-Za-z0-9._-]{{1,64}} (not . or ..), got \"{}\"",
                                     c.service));
  }
  c.log_level = root.choice("log_level", c.log_level,
                            {"trace", "debug", "info", "warn", "error", "critical", "off"});

  c.layout = read_layout(root.section("layout"));
  auto layout = IdLayout::create(c.layout, now_ms);
  if (!layout) {
    const auto& e = layout.error();
    throw ConfigFault({e.field.empty() ? "layout" : "layout." + e.field, e.message});
  }
  c.generator = read_generator(root.section("generator"), layout.value());
  c.coordinator = read_coordinator(root.section("coordinator"), layout.value());
  c.generator.datacenter_id = c.coordinator.datacenter_id;
  c.zookeeper = read_zookeeper(root.section("zookeeper"), c.service, credentials_directory);
  // The recycle pool holds one node per worker ID.
  if (c.coordinator.type == CoordinatorType::recycle && c.layout.worker_bits > kMaxPoolWorkerBits) {
    throw ConfigFault(
        {"layout.worker_bits",
         fmt::format("must be at most {} with coordinator.type \"recycle\" (the pool holds a "
                     "ZooKeeper node per worker ID), got {}",
                     kMaxPoolWorkerBits, c.layout.worker_bits)});
  }
  c.http = read_http(root.section("http"), credentials_directory);
  c.sequences = read_sequences(root.section("sequences"));
  c.forms = read_forms(root.section("forms"), layout.value(), credentials_directory);
  c.leases = read_leases(root.section("leases"), c.coordinator,
                         std::int64_t{layout.value().max_worker_id()} + 1);
  root.finish();
  return c;
}

}  // namespace

std::string ConfigError::describe(const std::string& source) const {
  return key.empty() ? fmt::format("{}: {}", source, message)
                     : fmt::format("{}: {}: {}", source, key, message);
}

ConfigOverrides overrides_from_environment() {
  ConfigOverrides out;
  for (const auto& key : kOverridableKeys) {
    // Read while one thread runs (the commands load their config first).
    const char* value = std::getenv(key.variable);  // NOLINT(concurrency-mt-unsafe)
    if (value != nullptr && *value != '\0') out.push_back({key.variable, value});
  }
  const char* credentials = std::getenv(kCredentialsDirectory);  // NOLINT(concurrency-mt-unsafe)
  if (credentials != nullptr && *credentials != '\0')
    out.push_back({kCredentialsDirectory, credentials});
  return out;
}

Result<Config, ConfigError> parse_config(const nlohmann::json& document, std::int64_t now_ms,
                                         const ConfigOverrides& overrides) {
  nlohmann::json merged = document;
  // The key each override replaced, for its errors.
  std::vector<std::pair<std::string, std::string>> replaced;
  std::string credentials_directory;
  for (const auto& o : overrides) {
    if (o.variable == kCredentialsDirectory) {
      credentials_directory = o.value;
      continue;
    }
    const auto* key =
        std::find_if(std::begin(kOverridableKeys), std::end(kOverridableKeys),
                     [&](const OverridableKey& k) { return o.variable == k.variable; });
    if (key == std::end(kOverridableKeys)) return ConfigError{o.variable, "not a setting"};
    nlohmann::json value = o.value;
    if (key->integer) {
      const auto number = parse_id(o.value);
      if (!number) {
        return ConfigError{fmt::format("{} ({})", key->key, o.variable),
                           fmt::format("must be a whole number, got \"{}\"", o.value)};
      }
      value = *number;
    }
    // Into the document, sections made as needed; a file whose section is not
    // an object keeps it, and reading it says so.
    if (!merged.is_object()) break;
    const std::string path = key->key;
    const auto dot = path.find('.');
    nlohmann::json* section = &merged;
    if (dot != std::string::npos) {
      section = &merged[path.substr(0, dot)];
      if (section->is_null()) *section = nlohmann::json::object();
      if (!section->is_object()) continue;
    }
    (*section)[path.substr(dot == std::string::npos ? 0 : dot + 1)] = value;
    replaced.emplace_back(key->key, o.variable);
  }
  try {
    return read_config(merged, now_ms, credentials_directory);
  } catch (const ConfigFault& fault) {
    ConfigError error = fault.error;
    for (const auto& [key, variable] : replaced) {
      if (error.key == key) error.key = fmt::format("{} ({})", key, variable);
    }
    return error;
  }
}

Result<Config, ConfigError> load_config_file(const std::string& path, std::int64_t now_ms,
                                             const ConfigOverrides& overrides) {
  std::ifstream in(path);
  if (!in) return ConfigError{"", fmt::format("cannot open: {}", error_text(errno))};
  std::ostringstream text;
  text << in.rdbuf();
  return load_config_text(text.str(), now_ms, overrides);
}

Result<Config, ConfigError> load_config_text(std::string_view text, std::int64_t now_ms,
                                             const ConfigOverrides& overrides) {
  // The key being read, so that a number JSON cannot hold (1e309) is
  // reported against it: the parser throws before the value reaches us.
  // One entry per depth; an array's level has no key.
  std::vector<std::optional<std::string>> keys_read;
  const auto keys_text = [&keys_read] {
    std::vector<std::string> keys;
    for (const auto& key : keys_read) {
      if (key) keys.push_back(JsonSection::key_text(*key));
    }
    return fmt::format("{}", fmt::join(keys, "."));
  };
  // Nesting is refused while parsing: the parser keeps its own stack, but
  // a document's copy and comparison recurse, and a config of a few
  // thousand brackets would overflow the thread's stack instead of exiting 2.
  struct TooDeep {};
  const auto track = [&keys_read](int depth, nlohmann::json::parse_event_t event,
                                  nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth > 0) {
      keys_read.resize(static_cast<std::size_t>(depth));
      keys_read.back() = parsed.get<std::string>();
    }
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxConfigDepth) {
      throw TooDeep{};
    }
    return true;
  };
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text, track);
  } catch (const TooDeep&) {
    return ConfigError{keys_text(), fmt::format("nested deeper than {} levels: a config is an "
                                                "object of sections, a few levels deep",
                                                kMaxConfigDepth)};
  } catch (const nlohmann::json::parse_error& e) {
    return ConfigError{"", fmt::format("invalid JSON: {}", e.what())};
  } catch (const nlohmann::json::exception& e) {
    return ConfigError{keys_text(), fmt::format("not a number this config can hold: {}", e.what())};
  }
  return parse_config(document, now_ms, overrides);
}

}  // namespace snowflake
