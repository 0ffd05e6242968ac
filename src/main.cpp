// snowflaked: start-up order, signals and shutdown order. The parts it wires
// live in the core library; nothing here knows their details.

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <boost/asio/post.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "client/get_command.hpp"
#include "logging.hpp"
#include "snowflake/clock.hpp"
#include "snowflake/config.hpp"
#include "snowflake/coord/cluster_floor.hpp"
#include "snowflake/coord/cluster_root.hpp"
#include "snowflake/coord/coordinator.hpp"
#include "snowflake/coord/leaf_import.hpp"
#include "snowflake/coord/pool_status.hpp"
#include "snowflake/coord/static_worker.hpp"
#include "snowflake/coordination_gauges.hpp"
#include "snowflake/http/listen_address.hpp"
#include "snowflake/http/router.hpp"
#include "snowflake/http/server.hpp"
#include "snowflake/id_generator.hpp"
#include "snowflake/id_json.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/lease.hpp"
#include "snowflake/metrics.hpp"
#include "snowflake/systemd_notifier.hpp"
#include "snowflake/time_format.hpp"
#include "snowflake/version.hpp"
#include "snowflake/worker_slot.hpp"
#include "stop_signals.hpp"

namespace {

using namespace snowflake;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;  // bad command line or config

// Loads the config named on the command line, or the defaults without one.
// Prints the error and returns nullopt on failure.
std::optional<Config> load_config(const CommandLine& cl) {
  const std::int64_t now_ms = SystemClock::instance().wall_ms();
  auto config = cl.config_path ? load_config_file(*cl.config_path, now_ms)
                               : parse_config(nlohmann::json::object(), now_ms);
  if (!config) {
    print_error(config.error().describe(cl.config_path.value_or("defaults")));
    return std::nullopt;
  }
  return std::move(config).value();
}

IdLayout make_layout(const Config& config) {
  // The config was validated against the same rules a moment ago.
  return IdLayout::create(config.layout, SystemClock::instance().wall_ms()).value();
}

int decode(const CommandLine& cl) {
  const auto config = load_config(cl);
  if (!config) return kExitUsage;
  const auto id = parse_id(cl.id_text);
  if (!id) {
    std::cerr << "decode: \"" << cl.id_text
              << "\" is not an ID: expected decimal digits, at most 9223372036854775807\n";
    return kExitUsage;
  }
  const auto decoded = make_layout(*config).decompose(*id);
  std::cout << decoded_id_to_json(decoded.value()).dump() << '\n';
  return 0;
}

// A layout whose time range has run out decodes IDs but can issue none (the
// uid-generator preset's ran out in 2024): the daemon and check-config
// refuse it; decode takes it.
std::optional<std::string> layout_ended(const Config& config, const std::string& source) {
  const IdLayout layout = make_layout(config);
  if (layout.end_of_life_ms() > SystemClock::instance().wall_ms()) return std::nullopt;
  return fmt::format(
      "{}: layout: its time range ended at {} ({}): it can decode IDs "
      "(snowflaked decode), never issue one; a cluster needs a layout that lasts "
      "(a later epoch or more time bits) and a new zookeeper.root",
      source, format_iso8601_ms(layout.end_of_life_ms()), layout.describe());
}

int check_config(const CommandLine& cl) {
  const auto config = load_config(cl);
  if (!config) return kExitUsage;
  if (const auto ended = layout_ended(*config, *cl.config_path)) {
    print_error(*ended);
    return kExitUsage;
  }
  std::cout << *cl.config_path << ": OK (" << make_layout(*config).describe() << ")\n";
  return 0;
}

coord::ZkSettings zookeeper_settings(const Config& c) {
  return {.hosts = c.zookeeper.hosts,
          .session_timeout = c.zookeeper.session_timeout,
          .connect_timeout = c.zookeeper.connect_timeout,
          .digest_auth = c.zookeeper.digest_auth.empty() ? std::nullopt
                                                         : std::optional(c.zookeeper.digest_auth)};
}

int pool_status(const CommandLine& cl) {
  const auto config = load_config(cl);
  if (!config) return kExitUsage;
  if (config->coordinator.type != "recycle") {
    std::cerr << *cl.config_path
              << ": coordinator.type: pool status needs \"recycle\", this config "
              << "is \"" << config->coordinator.type << "\"\n";
    return kExitUsage;
  }
  configure_logging("warn");  // the ZooKeeper client's chatter stays out of the report
  auto zk = coord::ZkSession::connect(zookeeper_settings(*config));
  if (!zk) {
    std::cerr << "cannot reach ZooKeeper at " << config->zookeeper.hosts << ": "
              << zk.error().message() << '\n';
    return kExitFailure;
  }
  const auto status = coord::read_pool_status(*zk.value(), config->zookeeper.root,
                                              config->coordinator.reclaim_after);
  if (!status) {
    std::cerr << "cannot read the pool: " << status.error().message << '\n';
    return kExitFailure;
  }
  if (cl.json) {
    std::cout << coord::to_json(status.value()).dump(2) << '\n';
  } else {
    std::cout << coord::to_text(status.value());
  }
  return 0;
}

// snowflaked pool floor: raises the cluster's migration floor, then waits
// until every owner that may still issue has confirmed it.
int pool_floor(const CommandLine& cl) {
  const auto config = load_config(cl);
  if (!config) return kExitUsage;
  const auto& co = config->coordinator;
  if (co.type == "static") {
    print_error(
        fmt::format("{}: coordinator.type: pool floor needs a ZooKeeper cluster (sequential "
                    "or recycle); in static mode set coordinator.min_id",
                    *cl.config_path));
    return kExitUsage;
  }
  configure_logging("warn");  // the ZooKeeper client's chatter stays out of the report
  auto zk = coord::ZkSession::connect(zookeeper_settings(*config));
  if (!zk) {
    std::cerr << "cannot reach ZooKeeper at " << config->zookeeper.hosts << ": "
              << zk.error().message() << '\n';
    return kExitFailure;
  }
  coord::ZkSession& session = *zk.value();
  const IdLayout layout = make_layout(*config);
  const std::string& root = config->zookeeper.root;
  // The root as a daemon of this config would find it (made if missing, so
  // that a floor can be set before the first daemon starts).
  if (auto checked =
          coord::check_cluster_root(session, root, layout.settings(), co.type, co.datacenter_id);
      !checked) {
    std::cerr << checked.error().message << '\n';
    return kExitFailure;
  }
  std::uint64_t above = 0;
  if (cl.above_id) {
    above = *cl.above_id;
  } else {
    auto leaf = coord::read_leaf_cluster(session, *cl.from_leaf, co.safety_margin.count());
    if (!leaf) {
      std::cerr << "cannot read the Leaf cluster: " << leaf.error().message << '\n';
      return kExitFailure;
    }
    std::cout << fmt::format("Leaf cluster {}: {} server(s)\n", *cl.from_leaf,
                             leaf.value().servers.size());
    for (const auto& s : leaf.value().servers) {
      std::cout << fmt::format("  {:<32} {:<21} last report {}\n", s.node, s.address,
                               format_iso8601_ms(s.timestamp_ms));
    }
    above = leaf.value().largest_id;
    std::cout << fmt::format(
        "newest report {} + Leaf's report interval {} ms + safety_margin_ms {} = {}: "
        "the largest ID Leaf can have issued is {}\n",
        format_iso8601_ms(leaf.value().newest_report_ms), coord::kLeafReportIntervalMs,
        co.safety_margin.count(), format_iso8601_ms(leaf.value().issued_until_ms), above);
  }
  auto raised = coord::raise_cluster_floor(session, root, coord::floor_above(layout, above));
  if (!raised) {
    std::cerr << "cannot set the floor: " << raised.error().message << '\n';
    return kExitFailure;
  }
  const coord::ClusterFloor floor = raised.value();
  std::cout << fmt::format("floor of {}: no ID at or below {}; IDs resume after {}\n", root,
                           floor.above_id, format_iso8601_ms(floor.ms));
  if (floor.ms > SystemClock::instance().wall_ms()) {
    std::cout << fmt::format(
        "note: that is {:.1f} s ahead of this machine's clock: until then daemons "
        "refuse with 503 floor_ahead (IDs of another layout can decode far "
        "ahead: does this cluster use the old system's layout?)\n",
        static_cast<double>(floor.ms - SystemClock::instance().wall_ms()) / 1000);
  }
  // Every owner that may still issue must confirm it.
  const auto patience = cl.timeout_given
                            ? std::chrono::milliseconds(cl.timeout_ms)
                            : co.lease_timeout + co.safety_margin + std::chrono::seconds(10);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    auto pending = coord::unconfirmed_owners(session, root, co.type, floor.ms, co.lease_timeout,
                                             co.safety_margin);
    if (!pending) {
      std::cerr << "cannot read the cluster's owners: " << pending.error().message << '\n';
      return kExitFailure;
    }
    if (pending.value().empty()) {
      std::cout << "confirmed: no daemon of the cluster issues an ID at or below " << floor.above_id
                << '\n';
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << fmt::format(
          "not confirmed within {} ms (the floor is set, and daemons honour it "
          "as they learn it; these may not have yet):\n",
          patience.count());
      for (const auto& o : pending.value()) {
        std::cerr << fmt::format("  worker ID {}: {}: {}\n", o.worker_id, o.owner, o.why);
      }
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int get_ids(const CommandLine& cl) {
  std::string servers(client::kDefaultServers);
  if (cl.servers) {
    servers = *cl.servers;
  } else {
    // Read before any thread starts; nothing calls setenv.
    const char* env = std::getenv(client::kServersVariable);  // NOLINT(concurrency-mt-unsafe)
    if (env && *env) servers = env;
  }
  auto replicas = client::parse_replica_list(servers);
  if (!replicas) {
    std::cerr << "snowflaked get: " << replicas.error() << '\n';
    return kExitUsage;
  }
  return client::run_get({.tag = cl.tag,
                          .count = cl.count,
                          .servers = std::move(replicas).value(),
                          .timeout = std::chrono::milliseconds(cl.timeout_ms),
                          .json = cl.json},
                         std::cout, std::cerr);
}

std::string state_dir(const Config& c) {
  if (!c.coordinator.state_dir.empty()) return c.coordinator.state_dir;
  // systemd's StateDirectory= (a colon-separated list; ours is the first).
  // Read in main before any thread starts; nothing calls setenv.
  const char* dir = std::getenv("STATE_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
  if (dir && *dir) {
    const std::string dirs = dir;
    return dirs.substr(0, dirs.find(':'));
  }
  return "/var/lib/snowflaked";
}

std::string default_advertise(std::uint16_t port) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::strcpy(host, "localhost");
  return fmt::format("{}:{}", host, port);
}

coord::CoordinatorOptions coordinator_options(const Config& c, std::uint16_t http_port) {
  return {.strategy = c.coordinator.type,
          .zookeeper = zookeeper_settings(c),
          .root = c.zookeeper.root,
          .settings = c.coordinator,
          .generator = c.generator,
          .advertise = c.coordinator.advertise.empty() ? default_advertise(http_port)
                                                       : c.coordinator.advertise,
          .state_dir = state_dir(c)};
}

// What systemd is told (see systemd_notifier.hpp). Runs on the server's main
// loop; it also sends the probe that the next call reads the answer of.
ServiceCondition service_condition(const http::RouterContext& router, http::HttpServer& server,
                                   const coord::Coordinator* coordinator,
                                   std::chrono::milliseconds limit) {
  ServiceCondition now{http::ready_to_issue(router), http::state_line(router), std::nullopt};
  const auto silence = server.event_loop_silence();
  server.probe_event_loops();
  if (silence > limit) {
    now.unhealthy =
        fmt::format("an HTTP event loop has not run for {} ms",
                    std::chrono::duration_cast<std::chrono::milliseconds>(silence).count());
  } else if (coordinator && !coordinator->heartbeat_thread_healthy(limit)) {
    now.unhealthy = fmt::format("the heartbeat thread has ended or been in one step for over {} ms",
                                limit.count());
  }
  return now;
}

unsigned io_thread_count(const HttpSettings& http) {
  if (http.io_threads > 0) return http.io_threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

int run_daemon(const CommandLine& cl) {
  auto config = load_config(cl);
  if (!config) return kExitUsage;
  if (const auto ended = layout_ended(*config, cl.config_path.value_or("defaults"))) {
    print_error(*ended);
    return kExitUsage;
  }
  if (cl.log_level) {
    if (!is_log_level(*cl.log_level)) {
      print_error("--log-level: must be one of trace, debug, info, warn, error, critical, off");
      return kExitUsage;
    }
    config->log_level = *cl.log_level;
  }
  if (cl.listen) config->http.listen = *cl.listen;
  const auto endpoint = http::parse_listen_address(config->http.listen);
  if (!endpoint) {
    print_error(fmt::format("--listen: must be {}, got \"{}\"", http::kListenAddressForm,
                            config->http.listen));
    return kExitUsage;
  }
  configure_logging(config->log_level);
  // Before any thread starts: every thread inherits the blocked signals.
  StopSignals stop_signals;

  const IdLayout layout = make_layout(*config);
  WorkerSlot worker;
  Lease lease;
  CoordinationGauges gauges;
  const bool coordinated = config->coordinator.type != "static";
  std::unique_ptr<coord::StaticWorker> static_worker;
  if (!coordinated) {
    std::optional<std::int64_t> floor_ms;
    if (config->coordinator.min_id) {
      floor_ms = coord::floor_above(layout, *config->coordinator.min_id).ms;
      gauges.cluster_floor_ms.store(*floor_ms, std::memory_order_relaxed);
      spdlog::info("migration floor: no ID at or below {} (coordinator.min_id; time unit of {})",
                   *config->coordinator.min_id, format_iso8601_ms(*floor_ms));
    }
    static_worker = std::make_unique<coord::StaticWorker>(
        state_dir(*config), config->coordinator.static_worker_id, layout, config->generator,
        config->coordinator.persist_interval, floor_ms);
    if (auto started = static_worker->start(worker); !started) {
      spdlog::critical("{}", started.error());
      return kExitFailure;
    }
  }
  Metrics metrics(config->http.max_metric_tags);
  const unsigned threads = io_thread_count(config->http);
  const auto& co = config->coordinator;
  http::RouterContext router{
      layout,
      worker,
      lease,
      gauges,
      metrics,
      config->http,
      {config->service, co.type, std::chrono::steady_clock::now(), threads,
       coordinated ? std::optional(ConfiguredTimings{co.heartbeat_interval, co.lease_timeout,
                                                     co.reclaim_after, co.max_skew})
                   : std::nullopt,
       co.datacenter_id}};

  http::HttpServer server(
      {.endpoint = *endpoint,
       .io_threads = threads,
       .max_connections = config->http.max_connections,
       .idle_timeout = config->http.idle_timeout,
       .request_timeout = config->http.request_timeout,
       .drain_timeout = config->http.drain_timeout,
       .limits = http::RequestLimits{}},
      {.handle = [&router](const http::Request& req) { return http::handle_request(req, router); },
       .reject =
           [&router](http::Status status, std::string_view code, std::string_view message) {
             return http::reject_request(status, code, message, router);
           }});
  const auto bound = server.listen();
  if (!bound) {
    spdlog::critical("{}", bound.error());
    return kExitFailure;
  }

  std::unique_ptr<coord::Coordinator> coordinator;
  SystemdNotifier notifier(server.main_context(), [&](std::chrono::milliseconds limit) {
    return service_condition(router, server, coordinator.get(), limit);
  });

  stop_signals.start([&](int) {
    boost::asio::post(server.main_context(), [&] {
      notifier.stop("stopping: draining connections, then giving the worker ID back");
      server.stop();
    });
  });

  std::atomic<bool> fatal{false};
  if (coordinated) {
    coordinator = std::make_unique<coord::Coordinator>(
        coordinator_options(*config, bound.value().port()), layout, worker, lease, gauges,
        [&server, &notifier, &fatal](const std::string& why) {
          fatal = true;
          notifier.stop("failed: " + why);
          server.stop();
        });
    if (auto started = coordinator->start(); !started) {
      spdlog::critical("{}", started.error());
      return kExitFailure;
    }
  } else {
    lease.grant_indefinitely();  // static mode owns its worker ID from the start
  }
  notifier.start();
  if (const auto watchdog = notifier.watchdog_timeout(); watchdog.count() > 0) {
    const auto limit_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(watchdog).count() / 2;
    spdlog::info("systemd watchdog {} ms: pinging every {} ms while healthy", limit_ms * 2,
                 notifier.check_period().count());
    const auto zk_step_ms =
        (config->zookeeper.session_timeout + config->zookeeper.connect_timeout).count();
    if (coordinated && zk_step_ms >= limit_ms) {
      spdlog::warn(
          "WatchdogSec= ({} ms) is short for ZooKeeper's timeouts: one heartbeat step may "
          "take session_timeout_ms + connect_timeout_ms ({} ms), more than half of it",
          limit_ms * 2, zk_step_ms);
    }
  }

  const auto address = bound.value().address();
  spdlog::info(
      "snowflaked {} started: listening on {}{}{}:{} with {} io thread(s); service {}, "
      "worker {} ({}), layout {}",
      kVersion, address.is_v6() ? "[" : "", address.to_string(), address.is_v6() ? "]" : "",
      bound.value().port(), threads, config->service,
      coordinated ? std::string("from ZooKeeper")
                  : std::to_string(config->coordinator.static_worker_id),
      config->coordinator.type, layout.describe());
  server.run();
  // Drained: nothing can be issued any more; give the worker ID back.
  if (coordinator) coordinator->shutdown();
  if (static_worker) static_worker->shutdown();
  if (const IdGenerator* g = worker.current()) {
    spdlog::info("stopped; high-water mark {}", format_iso8601_ms(g->high_water_mark_ms()));
  }
  return fatal ? kExitFailure : 0;
}

int run_command(int argc, char** argv) {
  const auto cl = snowflake::parse_command_line(argc, argv);
  if (!cl) {
    print_error("snowflaked: " + cl.error() + "\n\n" + snowflake::usage_text());
    return kExitUsage;
  }
  switch (cl.value().action) {
    case Action::help:
      std::cout << snowflake::usage_text();
      return 0;
    case Action::version:
      std::cout << "snowflaked " << snowflake::kVersion << '\n';
      return 0;
    case Action::decode:
      return decode(cl.value());
    case Action::check_config:
      return check_config(cl.value());
    case Action::pool_status:
      return pool_status(cl.value());
    case Action::pool_floor:
      return pool_floor(cl.value());
    case Action::get:
      return get_ids(cl.value());
    case Action::run:
      return run_daemon(cl.value());
  }
  return kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever escapes (out of memory, a bug): unwind, so that the threads
  // stop and the state file is closed, and say what it was, rather than
  // std::terminate's bare abort.
  try {
    return run_command(argc, argv);
  } catch (const std::exception& e) {
    print_error(std::string("snowflaked: fatal: ") + e.what());
  } catch (...) {
    print_error("snowflaked: fatal: an unknown exception");
  }
  return kExitFailure;
}
