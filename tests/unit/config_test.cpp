#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/child_process.hpp"
#include "snowflake/config/config.hpp"

using namespace snowflake;
using nlohmann::json;

namespace {

constexpr std::int64_t kConfigNow = 1'800'000'000'000;

ConfigError config_error_of(const json& doc) {
  auto r = parse_config(doc, kConfigNow);
  REQUIRE(r.has_error());
  return r.error();
}

}  // namespace

TEST_CASE("an empty config gives every default", "[config]") {
  const Config c = parse_config(json::object(), kConfigNow).value();
  CHECK(c.service == "default");
  CHECK(c.log_level == "info");
  CHECK(c.layout == LayoutSettings{});
  CHECK(c.generator.max_backward_wait == std::chrono::milliseconds(5));
  CHECK(c.generator.sequence_start == SequenceStart::zero);
  CHECK(c.generator.random_sequence_bound == 64);
  CHECK(c.coordinator.type == CoordinatorType::static_id);
  CHECK(c.coordinator.static_worker_id == 0);
  CHECK(c.coordinator.restore_grace == std::chrono::milliseconds(2000));
  CHECK(c.http.listen == "127.0.0.1:8080");
  CHECK(c.http.io_threads == 0);
  CHECK(c.http.max_batch == 10000);
  CHECK(c.http.tag_allowlist.empty());
  CHECK(c.http.shutdown_delay == std::chrono::milliseconds(0));  // stops accepting at once
  CHECK_FALSE(c.http.tls);                                       // plain HTTP
  CHECK(c.http.tls_reload_interval == std::chrono::milliseconds(5000));
  CHECK_FALSE(c.leases.enabled);
  CHECK(c.leases.min_duration == std::chrono::milliseconds(1000));
  CHECK(c.leases.max_duration == std::chrono::milliseconds(540'000));  // the daemons' own lease
  CHECK(c.leases.pools.empty());
  CHECK(c.leases.new_pools);
  CHECK(c.leases.new_pool_max_worker_bits == 12);
  CHECK(c.leases.max_pools == 16);
}

TEST_CASE("leases.pools: each name's worker ID bits", "[config]") {
  const Config c = parse_config(json::parse(R"({"leases": {"pools": {"sony": {"worker_bits": 16},
      "split-5-5": {"worker_bits": 10}}, "new_pools": false}})"),
                                kConfigNow)
                       .value();
  CHECK(c.leases.pools == std::map<std::string, int, std::less<>>{{"sony", 16}, {"split-5-5", 10}});
  CHECK_FALSE(c.leases.new_pools);
}

TEST_CASE("leases.max_duration_ms: the daemons' lease, or less where reclaim_after leaves less",
          "[config]") {
  // 4000 - 1000 - 500 = 2500 < 3000: a holder must stop before the reaper.
  const Config c = parse_config(json::parse(R"({"coordinator": {"type": "recycle",
      "heartbeat_interval_ms": 1000, "lease_timeout_ms": 3000, "reclaim_after_ms": 4000,
      "safety_margin_ms": 1000, "max_skew_ms": 500}, "leases": {"enabled": true}})"),
                                kConfigNow)
                       .value();
  CHECK(c.leases.enabled);
  CHECK(c.leases.max_duration == std::chrono::milliseconds(2500));
}

TEST_CASE("http.shutdown_delay_ms: 0 to 10 minutes", "[config]") {
  const auto read = [](const char* text) { return parse_config(json::parse(text), kConfigNow); };
  CHECK(read(R"({"http": {"shutdown_delay_ms": 5000}})").value().http.shutdown_delay ==
        std::chrono::milliseconds(5000));
  CHECK(read(R"({"http": {"shutdown_delay_ms": 600000}})").value().http.shutdown_delay ==
        std::chrono::minutes(10));
  for (const char* bad :
       {R"({"http": {"shutdown_delay_ms": -1}})", R"({"http": {"shutdown_delay_ms": 600001}})",
        R"({"http": {"shutdown_delay_ms": "5s"}})"}) {
    INFO(bad);
    const auto e = read(bad).error();
    CHECK(e.key == "http.shutdown_delay_ms");
  }
}

TEST_CASE("http settings are read", "[config]") {
  const Config c = parse_config(json::parse(R"({"http": {"listen": "[::1]:9000", "io_threads": 3,
      "max_batch": 50, "max_connections": 9, "idle_timeout_ms": 100, "request_timeout_ms": 200,
      "drain_timeout_ms": 300, "shutdown_delay_ms": 0, "tag_allowlist": ["a", "b.c"],
      "max_metric_tags": 0}})"),
                                kConfigNow)
                       .value();
  CHECK(c.http.listen == "[::1]:9000");
  CHECK(c.http.io_threads == 3);
  CHECK(c.http.max_batch == 50);
  CHECK(c.http.max_connections == 9);
  CHECK(c.http.idle_timeout == std::chrono::milliseconds(100));
  CHECK(c.http.request_timeout == std::chrono::milliseconds(200));
  CHECK(c.http.drain_timeout == std::chrono::milliseconds(300));
  CHECK(c.http.shutdown_delay == std::chrono::milliseconds(0));
  CHECK(c.http.tag_allowlist == std::vector<std::string>{"a", "b.c"});
  CHECK(c.http.max_metric_tags == 0);
}

TEST_CASE("http.forward_tls_name: a DNS name or an IP address, with the CAs to verify it by",
          "[config][tls]") {
  test::TempDir dir;
  // A CA file is read at load: any PEM certificate will do here.
  const auto ca = dir.path() / "ca.pem";
  REQUIRE(test::run_process({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                             "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=ca", "-days", "1",
                             "-keyout", (dir.path() / "ca.key").string(), "-out", ca.string()})
              .status.code == 0);
  for (const std::string name : {"snowflaked.ids.svc", "localhost", "10.0.0.7", "::1", "a-b.c1"}) {
    const json doc = {{"http", {{"forward_ca_file", ca.string()}, {"forward_tls_name", name}}}};
    const auto c = parse_config(doc, kConfigNow);
    INFO(name);
    REQUIRE(c);
    CHECK(c.value().http.forward_tls_name == name);
    CHECK(c.value().http.forward_ca_file == ca.string());
  }
}

TEST_CASE("a full config is read", "[config]") {
  const Config c = parse_config(json::parse(R"({
      "service": "orders", "log_level": "debug",
      "layout": {"time_bits": 39, "worker_bits": 8, "sequence_bits": 16, "time_unit_ms": 10,
                 "epoch": "2020-06-01T00:00:00Z"},
      "generator": {"max_backward_wait_ms": 20, "max_floor_wait_ms": 3000,
                    "sequence_start": "random", "random_sequence_bound": 100},
      "coordinator": {"type": "static", "static_worker_id": 255}})"),
                                kConfigNow)
                       .value();
  CHECK(c.service == "orders");
  CHECK(c.layout.time_bits == 39);
  CHECK(c.layout.time_unit_ms == 10);
  CHECK(c.layout.epoch_ms == 1'590'969'600'000);
  CHECK(c.generator.max_backward_wait == std::chrono::milliseconds(20));
  CHECK(c.generator.max_floor_wait == std::chrono::milliseconds(3000));
  CHECK(c.generator.sequence_start == SequenceStart::random);
  CHECK(c.generator.random_sequence_bound == 100);
  CHECK(c.coordinator.static_worker_id == 255);
}

TEST_CASE("the epoch may be Unix milliseconds", "[config]") {
  const Config c = parse_config(json{{"layout", {{"epoch", 1288834974657}}}}, kConfigNow).value();
  CHECK(c.layout.epoch_ms == 1288834974657);  // Twitter's epoch
}

TEST_CASE("every config error names its key", "[config]") {
  struct Case {
    const char* doc;
    const char* key;
    const char* message_part;
  };
  const Case cases[] = {
      {R"([])", "", "must be a JSON object"},
      {R"({"http": {"tls_cert_file": "/x.crt"}})", "http.tls_key_file", "is required"},
      {R"({"http": {"tls_key_file": "/x.key"}})", "http.tls_cert_file", "is required"},
      {R"({"http": {"admin_listen": "127.0.0.1:0", "admin_client_ca_file": "/ca.pem"}})",
       "http.admin_client_ca_file", "needs TLS"},
      {R"({"http": {"tls_reload_interval_ms": 99}})", "http.tls_reload_interval_ms",
       "from 100 to 3600000"},
      {R"({"http": {"tls_cert_file": "/no/such.crt", "tls_key_file": "/no/such.key"}})",
       "http.tls_cert_file", "cannot open \"/no/such.crt\""},
      {R"({"http": {"forward_ca_file": "/no/such-ca.pem"}})", "http.forward_ca_file",
       "cannot open \"/no/such-ca.pem\""},
      {R"({"http": {"forward_ca_file": "/etc/hostname"}})", "http.forward_ca_file",
       "holds no PEM certificate"},
      {R"({"http": {"forward_tls_name": "two words"}})", "http.forward_tls_name",
       "not a DNS name or an IP address"},
      {R"({"http": {"forward_tls_name": "snowflaked.ids.svc:8443"}})", "http.forward_tls_name",
       "not a DNS name or an IP address"},
      {R"({"http": {"forward_tls_name": "a..b"}})", "http.forward_tls_name",
       "not a DNS name or an IP address"},
      {R"({"http": {"forward_tls_name": "snowflaked.ids.svc"}})", "http.forward_tls_name",
       "needs http.forward_ca_file"},
      {R"({"servce": "x"})", "servce", "unknown key"},
      {R"({"layout": {"time_bit": 41}})", "layout.time_bit", "unknown key"},
      {R"({"coordinator": {"worker": 1}})", "coordinator.worker", "unknown key"},
      {R"({"layout": 5})", "layout", "must be a JSON object"},
      {R"({"service": ""})", "service", "must match"},
      {R"({"service": "a/b"})", "service", "must match"},
      {R"({"service": 7})", "service", "must be a string"},
      {R"({"log_level": "loud"})", "log_level", "must be one of"},
      {R"({"layout": {"time_bits": "41"}})", "layout.time_bits", "must be an integer"},
      {R"({"layout": {"time_bits": 41.5}})", "layout.time_bits", "must be an integer"},
      {R"({"layout": {"time_bits": 0}})", "layout.time_bits", "from 1 to 61"},
      {R"({"layout": {"worker_bits": 40}})", "layout.worker_bits", "from 1 to 31"},
      {R"({"layout": {"sequence_bits": 13}})", "layout", "must be 63"},
      {R"({"layout": {"time_unit_ms": 0}})", "layout.time_unit_ms", "from 1 to"},
      {R"({"layout": {"epoch": "2025-01-01"}})", "layout.epoch", "UTC time"},
      {R"({"layout": {"epoch": "2025-02-30T00:00:00Z"}})", "layout.epoch", "UTC time"},
      {R"({"layout": {"epoch": "2030-01-01T00:00:00Z"}})", "layout.epoch", "future"},
      {R"({"layout": {"epoch": true}})", "layout.epoch", "UTC time"},
      {R"({"generator": {"max_backward_wait_ms": -1}})", "generator.max_backward_wait_ms",
       "from 0 to 60000"},
      {R"({"generator": {"max_floor_wait_ms": 60001}})", "generator.max_floor_wait_ms",
       "from 0 to 60000"},
      {R"({"generator": {"sequence_start": "middle"}})", "generator.sequence_start",
       R"(must be one of "zero", "random", got "middle")"},
      {R"({"generator": {"random_sequence_bound": 0}})", "generator.random_sequence_bound",
       "from 1 to 4096"},
      {R"({"generator": {"random_sequence_bound": 4097}})", "generator.random_sequence_bound",
       "from 1 to 4096"},
      {R"({"coordinator": {"type": "etcd"}})", "coordinator.type", "must be one of"},
      {R"({"coordinator": {"static_worker_id": 1024}})", "coordinator.static_worker_id",
       "from 0 to 1023"},
      {R"({"coordinator": {"static_worker_id": 18446744073709551615}})",
       "coordinator.static_worker_id", "from 0 to 1023"},
      {R"({"http": {"listen": "localhost:8080"}})", "http.listen", "IPv4:port or [IPv6]:port"},
      {R"({"http": {"listen": "::1:8080"}})", "http.listen", "IPv4:port or [IPv6]:port"},
      {R"({"http": {"listen": "127.0.0.1:70000"}})", "http.listen", "IPv4:port"},
      {R"({"http": {"listen": "127.0.0.1"}})", "http.listen", "IPv4:port"},
      {R"({"http": {"io_threads": -1}})", "http.io_threads", "from 0 to 1024"},
      {R"({"http": {"max_batch": 0}})", "http.max_batch", "from 1 to"},
      {R"({"http": {"idle_timeout_ms": 0}})", "http.idle_timeout_ms", "from 1 to"},
      {R"({"http": {"tag_allowlist": "order"}})", "http.tag_allowlist", "array of strings"},
      {R"({"http": {"tag_allowlist": ["order", "a b"]}})", "http.tag_allowlist",
       "every entry must be a tag"},
      {R"({"http": {"tag_allowlist": [7]}})", "http.tag_allowlist", "every entry must be a tag"},
      {R"({"http": {"port": 8080}})", "http.port", "unknown key"},
      // Leases: the recycle pool's worker IDs, ending before the reaper may
      // take them back and within the fence a wipe raises.
      {R"({"leases": {"enabled": true}})", "leases.enabled", "needs coordinator.type \"recycle\""},
      {R"({"coordinator": {"type": "recycle"}, "leases": {"enabled": true,
           "max_duration_ms": 540001}})",
       "leases.max_duration_ms", "at most coordinator.lease_timeout_ms (540001 > 540000)"},
      {R"({"coordinator": {"type": "recycle", "lease_timeout_ms": 3000, "heartbeat_interval_ms": 1000,
           "reclaim_after_ms": 4000, "safety_margin_ms": 1000, "max_skew_ms": 500},
          "leases": {"enabled": true, "max_duration_ms": 3000}})",
       "leases.max_duration_ms", "(3000 > 2500)"},
      {R"({"coordinator": {"type": "recycle"}, "leases": {"enabled": true,
           "min_duration_ms": 5000, "max_duration_ms": 4000}})",
       "leases.max_duration_ms", "at least min_duration_ms (4000 < 5000)"},
      {R"({"leases": {"min_duration_ms": 99}})", "leases.min_duration_ms", "from 100 to"},
      {R"({"leases": {"pool": "x"}})", "leases.pool", "unknown key"},
      {R"({"leases": {"pools": []}})", "leases.pools", "must be an object"},
      {R"({"leases": {"pools": {"cluster": {"worker_bits": 10}}}})", "leases.pools.cluster",
       "not \"cluster\""},
      {R"({"leases": {"pools": {"a b": {"worker_bits": 10}}}})", "leases.pools.\"a b\"",
       "is not a pool name"},
      {R"({"leases": {"pools": {"sony": 16}}})", "leases.pools.sony", "must be an object"},
      {R"({"leases": {"pools": {"sony": {}}}})", "leases.pools.sony.worker_bits", "is required"},
      {R"({"leases": {"pools": {"sony": {"worker_bits": 17}}}})", "leases.pools.sony.worker_bits",
       "from 1 to 16"},
      {R"({"leases": {"pools": {"sony": {"worker_bits": 16, "size": 3}}}})",
       "leases.pools.sony.size", "unknown key"},
      {R"({"leases": {"new_pool_max_worker_bits": 0}})", "leases.new_pool_max_worker_bits",
       "from 1 to 16"},
      {R"({"leases": {"max_pools": 1, "pools": {"a": {"worker_bits": 1}, "b": {"worker_bits": 1}}}})",
       "leases.max_pools", "at least the pools named in leases.pools (2)"},
      {R"({"layout": {"worker_bits": 5, "time_bits": 46},
           "coordinator": {"static_worker_id": 32}})",
       "coordinator.static_worker_id", "from 0 to 31"},
      // The lease must end before a worker ID can be reclaimed.
      {R"({"coordinator": {"heartbeat_interval_ms": 3000, "lease_timeout_ms": 3000}})",
       "coordinator.heartbeat_interval_ms", "less than lease_timeout_ms"},
      {R"({"coordinator": {"heartbeat_interval_ms": 1000, "lease_timeout_ms": 3000,
           "reclaim_after_ms": 3500, "safety_margin_ms": 1000}})",
       "coordinator.reclaim_after_ms", "3000 + 1000 > 3500"},
      // A running lease must outlast a reconnection's grace and a heartbeat.
      {R"({"coordinator": {"heartbeat_interval_ms": 1000, "lease_timeout_ms": 3000,
           "reclaim_after_ms": 5000, "restore_grace_ms": 2000}})",
       "coordinator.restore_grace_ms", "(2000 >= 3000 - 1000)"},
      {R"({"coordinator": {"type": "zk"}})", "coordinator.type", "static"},
      {R"({"coordinator": {"advertise": "no-port"}})", "coordinator.advertise", "host:port"},
      {R"({"coordinator": {"persist_interval_ms": 60000}})", "coordinator.persist_interval_ms",
       "at most 1000"},
      // After kill -9 the floor is up to 10 persist intervals ahead: the
      // boot wait must cover it, or every restart gives its worker ID away.
      {R"({"coordinator": {"persist_interval_ms": 600}})", "coordinator.max_boot_wait_ms",
       "at least 10 x persist_interval_ms (6000 > 5000)"},
      {R"({"coordinator": {"persist_interval_ms": 100, "max_boot_wait_ms": 999}})",
       "coordinator.max_boot_wait_ms", "(1000 > 999)"},
      // 2^64 and beyond parse as floating point: never an integer key.
      {R"({"coordinator": {"reclaim_after_ms": 18446744073709551616}})",
       "coordinator.reclaim_after_ms", "must be an integer"},
      {R"({"coordinator": {"reclaim_after_ms": 1e300}})", "coordinator.reclaim_after_ms",
       "must be an integer"},
      {R"({"coordinator": {"type": "recycle"}, "layout": {"worker_bits": 20, "sequence_bits": 2}})",
       "layout.worker_bits", "at most 16"},
      {R"({"zookeeper": {"root": "snowflake"}})", "zookeeper.root", "absolute"},
      {R"({"zookeeper": {"root": "/a/"}})", "zookeeper.root", "absolute"},
      {R"({"zookeeper": {"hosts": ""}})", "zookeeper.hosts", "host:port"},
      {R"({"zookeeper": {"hosts": "a:1,b:2/chroot"}})", "zookeeper.hosts", "zookeeper.root"},
      {R"({"zookeeper": {"auth_file": "/nonexistent/auth"}})", "zookeeper.auth_file",
       "cannot open"},
      {R"({"zookeeper": {"chroot": "/x"}})", "zookeeper.chroot", "unknown key"},
      // Datacenters: the field's bits, and a datacenter ID only with them.
      {R"({"layout": {"datacenter_bits": 32}})", "layout.datacenter_bits", "from 0 to 31"},
      {R"({"layout": {"datacenter_bits": 5}})", "layout", "41 + 5 + 10 + 12 = 68"},
      {R"({"layout": {"time_bits": 36, "datacenter_bits": 5}})", "coordinator.datacenter_id",
       "is required with layout.datacenter_bits 5: a number from 0 to 31"},
      {R"({"layout": {"time_bits": 36, "datacenter_bits": 5}, "coordinator": {"datacenter_id": 32}})",
       "coordinator.datacenter_id", "from 0 to 31"},
      {R"({"coordinator": {"datacenter_id": 0}})", "coordinator.datacenter_id",
       "the layout has no datacenter field"},
      {R"({"layout": {"order": "time,worker,sequence"}})", "layout.order", "must be one of"},
      // A preset is a whole layout.
      {R"({"layout": {"preset": "snowflake"}})", "layout.preset",
       R"(must be one of twitter, leaf, sonyflake, shardingsphere, uid-generator, got "snowflake")"},
      {R"({"layout": {"preset": "leaf", "epoch": 0}})", "layout.epoch",
       R"(is set (0) and so is layout.preset "leaf")"},
      {R"({"layout": {"preset": "twitter", "datacenter_bits": 5}})", "layout.datacenter_bits",
       R"(and so is layout.preset "twitter")"},
      {R"({"layout": {"preset": "twitter"}})", "coordinator.datacenter_id", "is required"},
      {R"({"layout": {"preset": "uid-generator"}, "coordinator": {"type": "recycle"}})",
       "layout.worker_bits", "at most 16"},
      {R"({"sequences": {"max_step": 0}})", "sequences.max_step", "from 1 to 2147483648"},
      {R"({"sequences": {"max_step": 2147483649}})", "sequences.max_step", "from 1 to"},
      {R"({"sequences": {"refill_at_percent": 95}})", "sequences.refill_at_percent",
       "from 1 to 90"},
      {R"({"sequences": {"enabled": "yes"}})", "sequences.enabled", "must be"},
      {R"({"sequences": {"segment_duration_s": 0}})", "sequences.segment_duration_s", "from 1"},
      {R"({"sequences": {"max_wait_ms": -1}})", "sequences.max_wait_ms", "from 0"},
      {R"({"sequences": {"max_tags": 0}})", "sequences.max_tags", "from 1"},
      {R"({"sequences": {"step": 5}})", "sequences.step", "unknown key"},
  };
  for (const auto& c : cases) {
    INFO(c.doc);
    const auto e = config_error_of(json::parse(c.doc));
    CHECK(e.key == c.key);
    CHECK_THAT(e.message, Catch::Contains(c.message_part));
  }
}

TEST_CASE("sequences: served by default in the ZooKeeper modes, in static mode when asked",
          "[config]") {
  const auto defaults = parse_config(json::object(), kConfigNow).value();
  CHECK_FALSE(defaults.sequences.served(defaults.coordinator.type));  // static
  CHECK(defaults.sequences.segment_duration == std::chrono::seconds(900));
  CHECK(defaults.sequences.refill_at_percent == 10);
  const auto recycle =
      parse_config(json::parse(R"({"coordinator": {"type": "recycle"}})"), kConfigNow).value();
  CHECK(recycle.sequences.served(recycle.coordinator.type));
  const auto off = parse_config(
      json::parse(R"({"coordinator": {"type": "recycle"}, "sequences": {"enabled": false}})"),
      kConfigNow);
  CHECK_FALSE(off.value().sequences.served(CoordinatorType::recycle));
  const auto on =
      parse_config(json::parse(R"({"sequences": {"enabled": true, "max_step": 5}})"), kConfigNow);
  CHECK(on.value().sequences.served(CoordinatorType::static_id));
  CHECK(on.value().sequences.max_step == 5);
}

TEST_CASE("the random bound's default shrinks to a small sequence space", "[config]") {
  const Config c =
      parse_config(json{{"layout", {{"time_bits", 51}, {"worker_bits", 8}, {"sequence_bits", 4}}}},
                   kConfigNow)
          .value();
  CHECK(c.generator.random_sequence_bound == 16);
}

TEST_CASE("config files: errors are printed as file: key: message", "[config]") {
  test::TempDir dir;
  SECTION("a valid file") {
    const auto path = dir.write("ok.json", R"({"coordinator": {"static_worker_id": 9}})");
    CHECK(load_config_file(path.string(), kConfigNow).value().coordinator.static_worker_id == 9);
  }
  SECTION("a bad key") {
    const auto path = dir.write("config.json", R"({"layout": {"time_bits": 99}})");
    const auto e = load_config_file(path.string(), kConfigNow).error();
    CHECK(e.describe("config.json") ==
          "config.json: layout.time_bits: must be an integer from 1 to 61, got 99");
  }
  SECTION("invalid JSON, with its position") {
    const auto path = dir.write("broken.json", "{\n  \"service\": \"x\",\n}");
    const auto e = load_config_file(path.string(), kConfigNow).error();
    CHECK(e.key.empty());
    CHECK_THAT(e.message, Catch::Contains("invalid JSON") && Catch::Contains("line 3"));
  }
  SECTION("a number JSON cannot hold (1e309) names its key, it does not abort") {
    const auto path = dir.write(
        "huge.json", R"({"coordinator": {"type": "recycle", "reclaim_after_ms": 1e309}})");
    const auto e = load_config_file(path.string(), kConfigNow).error();
    CHECK(e.key == "coordinator.reclaim_after_ms");
    CHECK_THAT(e.message,
               Catch::Contains("not a number this config can hold") && Catch::Contains("1e309"));
    const auto in_list = dir.write("list.json", R"({"http": {"tag_allowlist": ["a", -1e999]}})");
    CHECK(load_config_file(in_list.string(), kConfigNow).error().key == "http.tag_allowlist");
  }
  SECTION("nesting deeper than a config has is refused, naming the key, not a stack overflow") {
    // 100,000 brackets: copying such a document recursed through the stack.
    const std::string deep = R"({"http": {"tag_allowlist": )" + std::string(100'000, '[') +
                             std::string(100'000, ']') + "}}";
    const auto e = load_config_file(dir.write("deep.json", deep).string(), kConfigNow).error();
    CHECK(e.key == "http.tag_allowlist");
    CHECK_THAT(e.message, Catch::Contains("nested deeper than 32 levels"));
    // Under a mistyped section the path names their key (the fuzzer's finding).
    const std::string typo =
        R"({"zook": {"tag_allowlist": )" + std::string(1'000, '[') + std::string(1'000, ']') + "}}";
    CHECK(load_config_text(typo, kConfigNow).error().key == "zook.tag_allowlist");
    const auto top =
        load_config_text(std::string(50'000, '[') + std::string(50'000, ']'), kConfigNow);
    CHECK_THAT(top.error().message, Catch::Contains("nested deeper"));
    // 32 levels still parse (and are then refused for what they are).
    const std::string at_limit =
        R"({"http": {"tag_allowlist": )" + std::string(30, '[') + std::string(30, ']') + "}}";
    CHECK_THAT(load_config_text(at_limit, kConfigNow).error().message,
               !Catch::Contains("nested deeper"));
  }
  SECTION("a missing file") {
    const auto e = load_config_file((dir.path() / "nope.json").string(), kConfigNow).error();
    CHECK(e.describe("nope.json") == "nope.json: cannot open: No such file or directory");
  }
}

TEST_CASE("coordinator and zookeeper settings: defaults and reading", "[config]") {
  const Config d = parse_config(json::object(), kConfigNow).value();
  CHECK(d.coordinator.heartbeat_interval == std::chrono::minutes(3));  // the design card's
  CHECK(d.coordinator.lease_timeout == std::chrono::minutes(9));
  CHECK(d.coordinator.reclaim_after == std::chrono::minutes(15));
  CHECK(d.zookeeper.hosts == "127.0.0.1:2181");
  CHECK(d.zookeeper.root == "/snowflake/default");
  CHECK(d.zookeeper.digest_auth.empty());

  test::TempDir dir;
  const auto auth = dir.write("auth", "svc:pw\n");
  const Config c = parse_config(json::parse(R"({"service": "orders",
      "coordinator": {"type": "recycle", "state_dir": "/s", "heartbeat_interval_ms": 1000,
                      "lease_timeout_ms": 3000, "reclaim_after_ms": 5000, "safety_margin_ms": 2000,
                      "max_skew_ms": 50, "max_boot_wait_ms": 700, "persist_interval_ms": 20,
                      "advertise": "10.0.0.1:80"},
      "zookeeper": {"hosts": "a:1,b:2", "session_timeout_ms": 3000, "connect_timeout_ms": 400,
                    "auth_file": ")" + auth.string() +
                                            R"("}})"),
                                kConfigNow)
                       .value();
  CHECK(c.coordinator.type == CoordinatorType::recycle);
  CHECK(c.coordinator.state_dir == "/s");
  CHECK(c.coordinator.advertise == "10.0.0.1:80");
  CHECK(c.coordinator.reclaim_after == std::chrono::milliseconds(5000));
  CHECK(c.coordinator.persist_interval == std::chrono::milliseconds(20));
  // Unset: half of what the lease leaves after a heartbeat, below 2 s.
  CHECK(c.coordinator.restore_grace == std::chrono::milliseconds(1000));
  CHECK(c.zookeeper.root == "/snowflake/orders");
  CHECK(c.zookeeper.hosts == "a:1,b:2");
  CHECK(c.zookeeper.connect_timeout == std::chrono::milliseconds(400));
  CHECK(c.zookeeper.digest_auth == "svc:pw");
}

TEST_CASE("an unknown key that is not a plain word is named as a JSON string", "[config]") {
  // Found by the config_text fuzz target: {"": ...} failed naming no key.
  CHECK(config_error_of(json::parse(R"({"": {"time_bits": 1}})")).key == R"("")");
  CHECK(config_error_of(json::parse(R"({"layout": {"a.b": 1}})")).key == R"(layout."a.b")");
  CHECK(config_error_of(json::parse(R"({"x\ny": 1})")).key == R"("x\ny")");
  CHECK(config_error_of(json::parse(R"({"servce": 1})")).key == "servce");
  // And where the parser itself refuses a number, the path skips array levels.
  CHECK(load_config_text(R"({"": 1e309})", kConfigNow).error().key == R"("")");
  CHECK(load_config_text(R"({"http": {"tag_allowlist": [{"a.b": 1e309}]}})", kConfigNow)
            .error()
            .key == R"(http.tag_allowlist."a.b")");
}

TEST_CASE("an auth file with an endless first line is refused, not read without end", "[config]") {
  const auto e = config_error_of(json{{"zookeeper", {{"auth_file", "/dev/zero"}}}});
  CHECK(e.key == "zookeeper.auth_file");
  CHECK_THAT(e.message, Catch::Contains("over 4096 bytes"));
}

TEST_CASE("a relative auth file is a systemd credential when CREDENTIALS_DIRECTORY is set",
          "[config][credentials]") {
  test::TempDir credentials;
  credentials.write("zookeeper-auth", "svc:secret\n");
  const json doc = {{"zookeeper", {{"auth_file", "zookeeper-auth"}}}};
  const auto c =
      parse_config(doc, kConfigNow, {{kCredentialsDirectory, credentials.path().string()}});
  REQUIRE(c);
  CHECK(c.value().zookeeper.digest_auth == "svc:secret");
  CHECK(c.value().zookeeper.auth_file == credentials.path().string() + "/zookeeper-auth");
  // Without it, the same name is a path as given (and here there is none).
  const auto without = parse_config(doc, kConfigNow);
  REQUIRE_FALSE(without);
  CHECK(without.error().key == "zookeeper.auth_file");
  // An absolute path is read where it is, credentials or not.
  const auto absolute = parse_config(
      json{{"zookeeper", {{"auth_file", credentials.path().string() + "/zookeeper-auth"}}}},
      kConfigNow, {{kCredentialsDirectory, "/nonexistent"}});
  REQUIRE(absolute);
  CHECK(absolute.value().zookeeper.digest_auth == "svc:secret");
}

TEST_CASE("an auth file without user:password names the key", "[config]") {
  test::TempDir dir;
  const auto auth = dir.write("auth", "no-colon\n");
  const auto e = config_error_of(json{{"zookeeper", {{"auth_file", auth.string()}}}});
  CHECK(e.key == "zookeeper.auth_file");
  CHECK_THAT(e.message, Catch::Contains("user:password"));
}

TEST_CASE("datacenters: the datacenter ID reaches the generator, worker IDs keep the worker bits",
          "[config]") {
  const Config c = parse_config(json::parse(R"({"layout": {"time_bits": 41, "datacenter_bits": 5,
      "worker_bits": 5, "sequence_bits": 12}, "coordinator": {"datacenter_id": 30,
      "static_worker_id": 31}})"),
                                kConfigNow)
                       .value();
  CHECK(c.layout.datacenter_bits == 5);
  CHECK(c.coordinator.datacenter_id == 30);
  CHECK(c.generator.datacenter_id == 30);
  CHECK(c.coordinator.static_worker_id == 31);
  // The worker ID has 5 bits, whatever the datacenter has.
  CHECK(config_error_of(
            json::parse(R"({"layout": {"time_bits": 41, "datacenter_bits": 5, "worker_bits": 5,
      "sequence_bits": 12}, "coordinator": {"datacenter_id": 1, "static_worker_id": 32}})"))
            .key == "coordinator.static_worker_id");
}

TEST_CASE("presets set the whole layout, and the order is read", "[config]") {
  const Config twitter =
      parse_config(
          json::parse(R"({"layout": {"preset": "twitter"}, "coordinator": {"datacenter_id": 2}})"),
          kConfigNow)
          .value();
  CHECK(twitter.layout == find_layout_preset("twitter").value());
  const Config sony =
      parse_config(json::parse(R"({"layout": {"preset": "sonyflake"}})"), kConfigNow).value();
  CHECK(sony.layout.order == FieldOrder::sequence_high);
  CHECK(sony.layout.time_unit_ms == 10);
  const Config ordered =
      parse_config(json::parse(R"({"layout": {"order": "time,sequence,datacenter,worker"}})"),
                   kConfigNow)
          .value();
  CHECK(ordered.layout.order == FieldOrder::sequence_high);
  CHECK(parse_config(json::object(), kConfigNow).value().layout.order == FieldOrder::sequence_low);
}

TEST_CASE("the environment's settings take precedence over the file's", "[config]") {
  const json file = {{"service", "orders"},
                     {"coordinator", {{"type", "recycle"}}},
                     {"zookeeper", {{"hosts", "file:2181"}}}};
  const Config c = parse_config(file, kConfigNow,
                                {{"SNOWFLAKED_ZOOKEEPER_HOSTS", "zk1:2181,zk2:2181"},
                                 {"SNOWFLAKED_COORDINATOR_TYPE", "sequential"},
                                 {"SNOWFLAKED_LISTEN", "0.0.0.0:8080"},
                                 {"SNOWFLAKED_LOG_LEVEL", "debug"}})
                       .value();
  CHECK(c.zookeeper.hosts == "zk1:2181,zk2:2181");
  CHECK(c.coordinator.type == CoordinatorType::sequential);
  CHECK(c.http.listen == "0.0.0.0:8080");  // a section the file lacks
  CHECK(c.log_level == "debug");
  CHECK(c.service == "orders");  // not overridden: the file's
  CHECK(c.zookeeper.root == "/snowflake/orders");

  // The root follows an overridden service, as it follows the file's.
  const Config s = parse_config(file, kConfigNow, {{"SNOWFLAKED_SERVICE", "invoices"}}).value();
  CHECK(s.zookeeper.root == "/snowflake/invoices");
  const Config r =
      parse_config(file, kConfigNow, {{"SNOWFLAKED_ZOOKEEPER_ROOT", "/ids/eu"}}).value();
  CHECK(r.zookeeper.root == "/ids/eu");

  // Where other daemons reach this one, per pod (a ConfigMap is shared).
  CHECK(parse_config(file, kConfigNow, {{"SNOWFLAKED_ADVERTISE", "10.1.2.3:8080"}})
            .value()
            .coordinator.advertise == "10.1.2.3:8080");

  const json wide = {{"layout", {{"datacenter_bits", 5}, {"worker_bits", 5}}}};
  CHECK(parse_config(wide, kConfigNow, {{"SNOWFLAKED_DATACENTER_ID", "17"}})
            .value()
            .coordinator.datacenter_id == 17);
}

TEST_CASE("an environment setting's error names the key and the variable", "[config]") {
  const auto error = [](const ConfigOverrides& o) {
    auto r = parse_config(json::object(), kConfigNow, o);
    REQUIRE(r.has_error());
    return r.error().describe("c.json");
  };
  CHECK(error({{"SNOWFLAKED_DATACENTER_ID", "x1"}}) ==
        "c.json: coordinator.datacenter_id (SNOWFLAKED_DATACENTER_ID): must be a whole number, "
        "got \"x1\"");
  CHECK_THAT(error({{"SNOWFLAKED_COORDINATOR_TYPE", "leaf"}}),
             Catch::StartsWith("c.json: coordinator.type (SNOWFLAKED_COORDINATOR_TYPE): must be "));
  CHECK_THAT(error({{"SNOWFLAKED_ZOOKEEPER_HOSTS", "zk:2181/chroot"}}),
             Catch::StartsWith("c.json: zookeeper.hosts (SNOWFLAKED_ZOOKEEPER_HOSTS): "));
  CHECK_THAT(error({{"SNOWFLAKED_SERVICE", "a/b"}}),
             Catch::StartsWith("c.json: service (SNOWFLAKED_SERVICE): must match"));
  CHECK(error({{"SNOWFLAKED_WORKER", "1"}}) == "c.json: SNOWFLAKED_WORKER: not a setting");
  // An address the downward API left without its host (no pod IP yet).
  CHECK_THAT(error({{"SNOWFLAKED_ADVERTISE", ":8080"}}),
             Catch::StartsWith("c.json: coordinator.advertise (SNOWFLAKED_ADVERTISE): must be "
                               "\"host:port\"") &&
                 Catch::EndsWith("got \":8080\""));
  // A pod's IPv6 address, unbracketed, makes no URL: refused; bracketed, taken.
  CHECK_THAT(error({{"SNOWFLAKED_ADVERTISE", "fd00::1:8080"}}),
             Catch::Contains("an IPv6 host in brackets"));
  CHECK(parse_config(json::object(), kConfigNow, {{"SNOWFLAKED_ADVERTISE", "[fd00::1]:8080"}})
            .value()
            .coordinator.advertise == "[fd00::1]:8080");
}

TEST_CASE("overrides from the environment: every variable, an empty one unset", "[config]") {
  ::setenv("SNOWFLAKED_ZOOKEEPER_ROOT", "/from/env", 1);
  ::setenv("SNOWFLAKED_SERVICE", "", 1);
  const ConfigOverrides o = overrides_from_environment();
  ::unsetenv("SNOWFLAKED_ZOOKEEPER_ROOT");
  ::unsetenv("SNOWFLAKED_SERVICE");
  REQUIRE(o.size() == 1);
  CHECK(o[0].variable == "SNOWFLAKED_ZOOKEEPER_ROOT");
  CHECK(o[0].value == "/from/env");
}
