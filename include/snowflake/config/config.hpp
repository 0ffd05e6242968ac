#pragma once
// The daemon's settings: a JSON file in which every key has a default and is
// validated, with errors that name the key ("layout.time_bits: must be ...").
// Unknown keys are errors: a typo must not silently fall back to a default.

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/base/sha256.hpp"
#include "snowflake/base/tls_identity.hpp"
#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/forms/opaque_ids.hpp"
#include "snowflake/ids/form.hpp"
#include "snowflake/ids/generator.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake {

struct ConfigError {
  std::string key;  // "layout.time_bits"; empty for the file as a whole
  std::string message;

  // "<source>: <key>: <message>", the form printed before exit code 2.
  std::string describe(const std::string& source) const;
};

struct ZooKeeperSettings {
  // "host:port,host:port"; a chroot is refused (libzookeeper_mt frees a
  // chrooted path twice): zookeeper.root names the cluster's place instead.
  std::string hosts = "127.0.0.1:2181";
  std::string root;  // where this cluster's nodes live; default "/snowflake/<service>"
  std::chrono::milliseconds session_timeout{10'000};
  std::chrono::milliseconds connect_timeout{10'000};
  std::string auth_file;    // holds "user:password" for digest auth; empty: none
  std::string digest_auth;  // read from auth_file at load (never logged)
};

struct CoordinatorSettings {
  CoordinatorType type = CoordinatorType::static_id;
  std::uint32_t static_worker_id = 0;
  // The datacenter field of every ID (layout.datacenter_bits > 0 only, where
  // it is required). Worker IDs, from any strategy, cover the worker bits.
  std::uint32_t datacenter_id = 0;
  // Static mode's migration floor: no ID at or below it is issued (the
  // ZooKeeper modes keep theirs in the cluster root: snowflaked pool floor).
  std::optional<std::uint64_t> min_id;
  // The local state file's directory. Empty: $STATE_DIRECTORY (systemd's
  // StateDirectory=) or /var/lib/snowflaked.
  std::string state_dir;
  // "host:port" naming this daemon's node in the sequential strategy. Empty:
  // the host name and the HTTP port.
  std::string advertise;
  // The lease: each heartbeat extends it to (send time + lease_timeout);
  // others may reclaim a worker ID not written for reclaim_after, which must
  // exceed lease_timeout by safety_margin (clock rate and ZooKeeper servers'
  // clock differences), so an owner always stops before it can be reclaimed.
  std::chrono::milliseconds heartbeat_interval{180'000};
  std::chrono::milliseconds lease_timeout{540'000};
  std::chrono::milliseconds reclaim_after{900'000};
  std::chrono::milliseconds safety_margin{60'000};
  // Wall clock vs ZooKeeper's clock (the mtime of our write): more apart
  // than this and we refuse (at boot: exit; later: 503 clock_skew).
  std::chrono::milliseconds max_skew{2'000};
  // At boot, a wall clock behind the floor by up to this is waited out;
  // more is an error.
  std::chrono::milliseconds max_boot_wait{5'000};
  // How often the state file's high-water mark is rewritten; IDs are only
  // issued up to a time the file has already reserved, kReserveIntervals
  // intervals ahead (state/time_reservation.hpp).
  std::chrono::milliseconds persist_interval{100};
  static constexpr int kReserveIntervals = 10;
  // What ZooKeeper grants over a connection younger than this (a worker ID
  // claimed, a heartbeat's longer lease, a sequence range) is used only once
  // the connection is this old and the cluster's fence, or the sequence's
  // node, has been read again: a ZooKeeper restored from a backup is fenced
  // (snowflaked cluster fence, or the daemons that lived through it) before
  // anything taken from its old records goes out (docs/design.md, "A
  // restore, and the grace"). 0: used at once.
  std::chrono::milliseconds restore_grace{2'000};
};

struct HttpSettings {
  std::string listen = "127.0.0.1:8080";
  unsigned io_threads = 0;           // 0: one per core
  std::uint32_t max_batch = 10'000;  // largest ?count=
  std::uint32_t max_connections = 10'000;
  // A keep-alive connection with no request in flight is closed after this.
  std::chrono::milliseconds idle_timeout{60'000};
  // A request must arrive whole within this once its first byte has (so a
  // slow client cannot hold a connection), and a response be taken up in it.
  std::chrono::milliseconds request_timeout{10'000};
  // On SIGTERM, /ready answers 503 at once while requests are still served
  // for this long, so that a load balancer (a Kubernetes Service) takes the
  // daemon out before it stops accepting; 0: it stops accepting at once.
  std::chrono::milliseconds shutdown_delay{0};
  // Then, connections still busy after this are closed.
  std::chrono::milliseconds drain_timeout{10'000};
  // Empty: every valid tag. Otherwise other tags get 404 unknown_tag.
  std::vector<std::string> tag_allowlist;
  std::uint32_t max_metric_tags = 1000;  // per-tag series before they are lumped together
  // Meituan Leaf's routes, for clients moving over from Leaf:
  // GET /api/snowflake/get/<key> and GET /decodeSnowflakeId?snowflakeId=N.
  bool leaf_compat = false;
  // A second listener for the operators' routes (/metrics, /status, /decode,
  // /openapi.yaml, and /health and /ready too); empty: none, and they are
  // served on `listen` as well.
  std::string admin_listen;
  // A file holding a bearer token that opens the operators' routes on
  // `listen` too (and opaque decoding there); a relative name is a systemd
  // credential's. Only its SHA-256 is kept.
  std::string admin_token_file;
  std::optional<Sha256Digest> admin_token_sha256;
  // TLS on both listeners: the certificate chain and its key, PEM files,
  // both or neither; a relative name is a systemd credential's.
  std::string tls_cert_file;
  std::string tls_key_file;
  // With TLS and an admin listener: a PEM file of CAs; the admin listener
  // then takes only clients with a certificate one of them issued.
  std::string admin_client_ca_file;
  // How often the three files are looked at for a change (a rotation).
  std::chrono::milliseconds tls_reload_interval{5'000};
  // A strict tag's request passed on to an owner that serves TLS: the CAs
  // its certificate is verified against (a PEM file, the credentials
  // directory applied; empty: the system's), and the name it must carry
  // (empty: the host of the owner's advertised address, name or IP).
  std::string forward_ca_file;
  std::string forward_tls_name;
  // The files as read (the credentials directory applied), and what they
  // held, checked at load; null: plain HTTP.
  TlsFiles tls_files;
  std::shared_ptr<const TlsIdentity> tls;
};

// What GET /id/<tag> hands out (id_form.hpp): a form per tag, ?form= to ask
// for another.
struct FormSettings {
  // 64 hex digits: the AES-256 key of the opaque form; a relative name is a
  // systemd credential's. Without it there is no opaque form.
  std::string opaque_key_file;
  // Built from the key at load; the key itself is kept nowhere else.
  std::shared_ptr<const forms::OpaqueIds> opaque;
  IdForm default_form = IdForm::plain;  // forms.default: when ?form= is not given
  // forms.tags: each of these tags goes out in its form only.
  std::map<std::string, IdForm, std::less<>> by_tag;
  std::optional<IdForm> pinned_form(std::string_view tag) const {
    const auto it = by_tag.find(tag);
    return it == by_tag.end() ? std::nullopt : std::optional(it->second);
  }
  IdForm form_of(std::string_view tag) const { return pinned_form(tag).value_or(default_form); }
};

// Dense sequences per tag (GET /seq/<tag>), taken in ranges from ZooKeeper
// (sequence_store/sequence_supplier.hpp, sequence_sizing.hpp).
struct SequenceSettings {
  // Served by default in the ZooKeeper modes; in static mode only when set
  // true (a static daemon has no ZooKeeper otherwise).
  std::optional<bool> enabled;
  std::chrono::seconds segment_duration{900};  // how long a range should last at the rate
  std::int64_t max_step = 1'000'000'000;       // the largest range taken at once
  std::uint32_t refill_at_percent = 10;        // share of a range used before the next is fetched
  // A request that finds a tag's buffer empty waits this long for a range,
  // then gets 503 sequence_unavailable.
  std::chrono::milliseconds max_wait{1'000};
  std::uint32_t max_tags = 1'000;  // sequences one daemon serves
  bool served(CoordinatorType type) const {
    return enabled.value_or(type != CoordinatorType::static_id);
  }
};

// Worker-ID leases for generators in other processes (workers/lease_pool.hpp):
// the recycle pool's worker IDs, over HTTP.
struct LeaseSettings {
  bool enabled = false;
  std::chrono::milliseconds min_duration{1'000};
  // The longest lease granted. Unset: coordinator.lease_timeout_ms, or less
  // if reclaim_after_ms leaves less room (a lease + safety_margin_ms +
  // max_skew_ms must end before the reaper may take the worker ID back).
  std::chrono::milliseconds max_duration{0};
  // Free worker IDs a take leaves to the daemons (restarting ones give
  // theirs back and claim again). Unset: an eighth of the pool.
  std::uint32_t reserved_worker_ids = 0;
  // Named pools for other layouts (lease_pool.hpp): each name's worker ID
  // bits. A pool a request names that is not here is made on first use with
  // the bits it asks (CosId's machineBit) when new_pools allows, up to
  // new_pool_max_worker_bits and max_pools in all; refused otherwise.
  std::map<std::string, int, std::less<>> pools;
  bool new_pools = true;
  int new_pool_max_worker_bits = 12;
  std::uint32_t max_pools = 16;
};

struct Config {
  std::string service = "default";
  std::string log_level = "info";
  LayoutSettings layout;
  GeneratorOptions generator;
  CoordinatorSettings coordinator;
  ZooKeeperSettings zookeeper;
  HttpSettings http;
  SequenceSettings sequences;
  FormSettings forms;
  LeaseSettings leases;
};

// A setting given outside the file: the environment variable and its value.
struct ConfigOverride {
  std::string variable;  // "SNOWFLAKED_ZOOKEEPER_HOSTS"
  std::string value;
};
using ConfigOverrides = std::vector<ConfigOverride>;

// The settings a deployment changes without writing a file, each from its
// environment variable; they take precedence over the file, and the
// command line (--listen, --log-level) over them. A variable set to ""
// counts as not set.
//
//   SNOWFLAKED_SERVICE            service
//   SNOWFLAKED_COORDINATOR_TYPE   coordinator.type
//   SNOWFLAKED_DATACENTER_ID      coordinator.datacenter_id (decimal digits)
//   SNOWFLAKED_ZOOKEEPER_HOSTS    zookeeper.hosts
//   SNOWFLAKED_ZOOKEEPER_ROOT     zookeeper.root
//   SNOWFLAKED_LISTEN             http.listen
//   SNOWFLAKED_LOG_LEVEL          log_level
struct OverridableKey {
  const char* variable;
  const char* key;  // dotted, as errors name it
  bool integer;
};
inline constexpr OverridableKey kOverridableKeys[] = {
    {"SNOWFLAKED_SERVICE", "service", false},
    {"SNOWFLAKED_COORDINATOR_TYPE", "coordinator.type", false},
    {"SNOWFLAKED_DATACENTER_ID", "coordinator.datacenter_id", true},
    // Per pod where the config is shared (a ConfigMap): the pod's own
    // address, from the downward API, for strict tags' forwarding.
    {"SNOWFLAKED_ADVERTISE", "coordinator.advertise", false},
    {"SNOWFLAKED_ZOOKEEPER_HOSTS", "zookeeper.hosts", false},
    {"SNOWFLAKED_ZOOKEEPER_ROOT", "zookeeper.root", false},
    {"SNOWFLAKED_LISTEN", "http.listen", false},
    {"SNOWFLAKED_ADMIN_LISTEN", "http.admin_listen", false},
    {"SNOWFLAKED_LOG_LEVEL", "log_level", false},
};
// Not a key: where systemd put the credentials of LoadCredential= (a
// directory only this process may read). A relative zookeeper.auth_file,
// forms.opaque_key_file, http.admin_token_file or http's TLS files is read
// from it when it is set, so that a DynamicUser= daemon can read a secret only root may read.
inline constexpr const char* kCredentialsDirectory = "CREDENTIALS_DIRECTORY";
// The overrides this process's environment sets, CREDENTIALS_DIRECTORY too.
ConfigOverrides overrides_from_environment();

// `now_ms` (Unix ms) is what "the epoch must not be in the future" is judged
// against. `overrides` replace their keys of the document; an error about
// such a key names the variable too ("zookeeper.hosts (SNOWFLAKED_ZOOKEEPER_HOSTS)").
Result<Config, ConfigError> parse_config(const nlohmann::json& document, std::int64_t now_ms,
                                         const ConfigOverrides& overrides = {});
Result<Config, ConfigError> load_config_file(const std::string& path, std::int64_t now_ms,
                                             const ConfigOverrides& overrides = {});
// The file's text: whatever it holds, a Config or an error naming the key.
Result<Config, ConfigError> load_config_text(std::string_view text, std::int64_t now_ms,
                                             const ConfigOverrides& overrides = {});

}  // namespace snowflake
