// One job: the daemon's start-up and shutdown, as named steps (docs/design.md,
// "Start-up and shutdown"): the config read, each part made and wired to the others, the
// signals and systemd told, and everything stopped in the reverse order.

#include "snowflake/process/daemon.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/base/listen_address.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/base/tls_peer.hpp"
#include "snowflake/cluster/cluster_history.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/cluster/migration_floor.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/http/router.hpp"
#include "snowflake/http/server.hpp"
#include "snowflake/http/strict_forwarder.hpp"
#include "snowflake/http/tls_context.hpp"
#include "snowflake/http/tls_reloader.hpp"
#include "snowflake/ids/generator.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/process/logging.hpp"
#include "snowflake/process/program_config.hpp"
#include "snowflake/process/stop_signals.hpp"
#include "snowflake/process/systemd_notifier.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/metrics.hpp"
#include "snowflake/runtime/worker_slot.hpp"
#include "snowflake/sequence_store/sequence_supplier.hpp"
#include "snowflake/sequences/registry.hpp"
#include "snowflake/state/owner_token.hpp"
#include "snowflake/state/sequence_run.hpp"
#include "snowflake/version.hpp"
#include "snowflake/workers/coordinator.hpp"
#include "snowflake/workers/lease_service.hpp"
#include "snowflake/workers/static_worker.hpp"

namespace snowflake {

namespace {

// The config file with the command line's flags applied; what is wrong with
// either is printed (exit 2).
struct DaemonConfig {
  Config config;
  boost::asio::ip::tcp::endpoint endpoint;
  std::optional<http::TlsContexts> tls;  // http.tls_cert_file's, when set
};

std::optional<DaemonConfig> load_daemon_config(const DaemonOptions& options) {
  auto config = load_config(options.config_file);
  if (!config) return std::nullopt;
  if (const auto ended = layout_ended(*config, options.config_file.value_or("defaults"))) {
    fail(kExitUsage, *ended);
    return std::nullopt;
  }
  if (options.log_level) {
    if (!is_log_level(*options.log_level)) {
      fail(kExitUsage,
           "--log-level: must be one of trace, debug, info, warn, error, critical, off");
      return std::nullopt;
    }
    config->log_level = *options.log_level;
  }
  if (options.listen) config->http.listen = *options.listen;
  const auto endpoint = parse_listen_address(config->http.listen);
  if (!endpoint) {
    fail(kExitUsage,
         fmt::format("--listen: must be {}, got \"{}\"", kListenAddressForm, config->http.listen));
    return std::nullopt;
  }
  std::optional<http::TlsContexts> tls;
  if (config->http.tls) {
    // The files were checked at load; what is left is what only the TLS
    // library can refuse (a key type it cannot serve).
    auto contexts = http::make_tls_contexts(*config->http.tls);
    if (!contexts) {
      fail(kExitUsage, fmt::format("{}: http.{}: {}", options.config_file.value_or("defaults"),
                                   tls_file_key(contexts.error().file), contexts.error().message));
      return std::nullopt;
    }
    tls = std::move(contexts).value();
    // The contexts hold the key from now on: the settings keep what
    // describes the certificate, not another copy of it.
    config->http.tls = std::make_shared<const TlsIdentity>(config->http.tls->description());
  }
  return DaemonConfig{std::move(*config), *endpoint, std::move(tls)};
}

std::string default_advertise(std::uint16_t port) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::strcpy(host, "localhost");
  return fmt::format("{}:{}", host, port);
}

// Where other daemons and clients reach this one's HTTP API, as a strict
// sequence's owner record says (coordinator.advertise, else the address it
// is bound to if that is one address, else the host name).
std::string owner_address(const Config& c, const boost::asio::ip::tcp::endpoint& bound) {
  if (!c.coordinator.advertise.empty()) return c.coordinator.advertise;
  const auto ip = bound.address();
  if (ip.is_unspecified()) return default_advertise(bound.port());
  return ip.is_v6() ? fmt::format("[{}]:{}", ip.to_string(), bound.port())
                    : fmt::format("{}:{}", ip.to_string(), bound.port());
}

// How strict tags' owners serving TLS are asked: with the CAs of
// http.forward_ca_file (checked at load; here again should it have changed
// since). nullopt without it, or when it cannot be read: such owners are
// named to the client at once instead (as before the key was, so that a
// TLS fleet upgraded with an unchanged config is not held to a deadline by
// owners it cannot verify).
std::optional<http::ForwardingTls> forwarding_tls(const HttpSettings& http) {
  if (http.forward_ca_file.empty()) return std::nullopt;
  auto made = make_peer_tls(http.forward_ca_file, "http.forward_ca_file");
  if (!made) {
    spdlog::warn("strict tags' owners that serve TLS are not asked for their numbers: {}",
                 made.error());
    return std::nullopt;
  }
  return http::ForwardingTls{std::move(made).value(), http.forward_tls_name};
}

coord::CoordinatorOptions coordinator_options(const Config& c, std::uint16_t http_port) {
  return {.strategy = c.coordinator.type,
          .zookeeper = zookeeper_settings(c),
          .root = c.zookeeper.root,
          .settings = c.coordinator,
          .generator = c.generator,
          .advertise = c.coordinator.advertise.empty() ? default_advertise(http_port)
                                                       : c.coordinator.advertise,
          .state_dir = state_dir_of(c),
          .opaque_key = c.forms.opaque ? c.forms.opaque->fingerprint() : std::string(),
          .forms = coord::form_policy_of(c.forms)};
}

// A certificate this close to its end is warned of at start (the alert
// rule's threshold, contrib/prometheus/alerts.yml).
constexpr std::chrono::seconds kTlsExpiryWarning{7 * 86'400};

unsigned io_thread_count(const HttpSettings& http) {
  if (http.io_threads > 0) return http.io_threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// The parts in the order they start; they stop in the reverse order (the
// order of the members is the order of their destruction, backwards).
class Daemon {
 public:
  Daemon(Config config, const boost::asio::ip::tcp::endpoint& endpoint,
         std::optional<http::TlsContexts> tls);

  // Static mode: the worker ID from the config, its floor from the state
  // file (and coordinator.min_id). Errors are logged.
  bool start_static_worker();
  // Binds the HTTP listener. Errors are logged.
  bool listen();
  // SIGTERM and SIGINT: /ready says 503 at once, requests are served for
  // http.shutdown_delay_ms more (a second signal cuts it short), then the
  // server drains; the worker ID is given back after.
  void stop_on(StopSignals& signals);
  // The ZooKeeper modes: a worker ID from the cluster, the heartbeat thread.
  // Errors are logged. Static mode holds its lease from the start.
  bool start_coordination();
  // Dense sequences (sequences.enabled): the supplier thread; it connects
  // on its own, so a slow ZooKeeper delays sequences, not the start.
  void start_sequences();
  // Worker-ID leases for other processes (leases.enabled): their thread.
  void start_leases();
  // Tells systemd it is ready, and pings its watchdog while healthy.
  void start_notifier();
  // With TLS: looks for a rotated certificate from now on.
  void start_tls_reloader();
  // Serves until stopped, then gives the worker ID back. The exit code.
  int serve();

 private:
  // What systemd is told (see systemd_notifier.hpp). Runs on the server's
  // main loop; it also sends the probe that the next call reads the answer of.
  ServiceCondition service_condition(std::chrono::milliseconds limit);
  // On the main loop: the first stop signal, and the end of the delay.
  void begin_stop();
  void stop_serving();
  void log_started() const;

  const Config config_;
  const boost::asio::ip::tcp::endpoint endpoint_;
  const IdLayout layout_;
  const bool coordinated_;
  const unsigned threads_;
  WorkerSlot worker_;
  Lease lease_;
  CoordinationGauges gauges_;
  std::unique_ptr<coord::StaticWorker> static_worker_;
  Liveness liveness_;
  Metrics metrics_;
  std::unique_ptr<SequenceRegistry> sequences_;
  // Static mode's own record of the cluster's history, for its sequences
  // (the coordinator keeps it in the ZooKeeper modes).
  std::unique_ptr<coord::ClusterHistory> static_history_;
  // Strict sequences' requests passed on to their owners; outlives the
  // server, whose router points to it.
  std::unique_ptr<http::StrictForwarder> forwarder_;
  std::atomic<bool> stopping_{false};  // what /ready reads: SIGTERM came
  // Where the routers hand lease requests (to lease_service_, once started);
  // outlives the server, whose routers point to it.
  LeaseDesk lease_desk_;
  // Each listener answers by its own route table (route_access.hpp).
  const http::RouteTable main_routes_;
  const http::RouteTable admin_routes_;
  http::RouterContext router_;
  http::RouterContext admin_router_;
  http::HttpServer server_;
  std::optional<boost::asio::ip::tcp::endpoint> bound_;
  std::optional<boost::asio::ip::tcp::endpoint> bound_admin_;
  std::unique_ptr<coord::Coordinator> coordinator_;
  std::unique_ptr<coord::SequenceSupplier> supplier_;
  // After the coordinator, whose session it uses: it stops first.
  std::unique_ptr<coord::LeaseService> lease_service_;
  SystemdNotifier notifier_;
  boost::asio::steady_timer shutdown_delay_;         // on the main loop
  std::unique_ptr<http::TlsReloader> tls_reloader_;  // on the main loop; with TLS only
  bool serving_stopped_ = false;                     // on the main loop: stop_serving() ran
  std::atomic<int> exit_code_{0};                    // set by a fatal coordination error
};

http::RouterContext router_context(const Config& config, const IdLayout& layout, WorkerSlot& worker,
                                   Lease& lease, CoordinationGauges& gauges,
                                   const Liveness& liveness, Metrics& metrics, unsigned threads,
                                   bool coordinated, SequenceRegistry* sequences,
                                   const http::RouteTable& routes) {
  const auto& co = config.coordinator;
  return {layout,
          worker,
          lease,
          gauges,
          liveness,
          metrics,
          config.http,
          {config.service, co.type, BootClock::now(), threads,
           coordinated
               ? std::optional(ConfiguredTimings{co.heartbeat_interval, co.lease_timeout,
                                                 co.reclaim_after, co.max_skew, co.restore_grace})
               : std::nullopt,
           co.datacenter_id},
          sequences,
          config.sequences.max_wait,
          &config.forms,
          &routes};
}

// The handlers of one listener: its router context answers.
http::Handlers handlers_of(http::RouterContext& router) {
  return {
      .handle = [&router](const http::Request& req) { return http::handle_request(req, router); },
      .reject =
          [&router](http::Status status, std::string_view code, std::string_view message) {
            return http::reject_request(status, code, message, router);
          }};
}

Daemon::Daemon(Config config, const boost::asio::ip::tcp::endpoint& endpoint,
               std::optional<http::TlsContexts> tls)
    : config_(std::move(config)),
      endpoint_(endpoint),
      layout_(layout_of(config_)),
      coordinated_(config_.coordinator.type != CoordinatorType::static_id),
      threads_(io_thread_count(config_.http)),
      metrics_(config_.http.max_metric_tags),
      sequences_(config_.sequences.served(config_.coordinator.type)
                     ? std::make_unique<SequenceRegistry>(config_.sequences.max_tags)
                     : nullptr),
      main_routes_(http::main_route_table(config_.http)),
      admin_routes_(http::admin_route_table()),
      router_(router_context(config_, layout_, worker_, lease_, gauges_, liveness_, metrics_,
                             threads_, coordinated_, sequences_.get(), main_routes_)),
      admin_router_(router_context(config_, layout_, worker_, lease_, gauges_, liveness_, metrics_,
                                   threads_, coordinated_, sequences_.get(), admin_routes_)),
      server_({.endpoint = endpoint_,
               .admin_endpoint = config_.http.admin_listen.empty()
                                     ? std::nullopt
                                     : parse_listen_address(config_.http.admin_listen),
               .io_threads = threads_,
               .max_connections = config_.http.max_connections,
               .idle_timeout = config_.http.idle_timeout,
               .request_timeout = config_.http.request_timeout,
               .drain_timeout = config_.http.drain_timeout,
               .limits = http::RequestLimits{},
               .tls_gauges = &metrics_.tls()},
              handlers_of(router_), handlers_of(admin_router_), std::move(tls)),
      notifier_(
          server_.main_context(),
          [this](std::chrono::milliseconds limit) { return service_condition(limit); }, liveness_,
          // Without a watchdog to set it: the longest one heartbeat step may
          // rightly take (a ZooKeeper call that times out, then a reconnect).
          std::max(std::chrono::milliseconds(1000),
                   config_.zookeeper.session_timeout + config_.zookeeper.connect_timeout)),
      shutdown_delay_(server_.main_context()) {
  router_.stopping = &stopping_;
  admin_router_.stopping = &stopping_;
  if (sequences_) sequences_->zookeeper_clock.set_max_skew(config_.coordinator.max_skew);
}

bool Daemon::start_static_worker() {
  if (coordinated_) return true;
  std::optional<std::int64_t> floor_ms;
  if (const auto min_id = config_.coordinator.min_id) {
    floor_ms = coord::floor_above(layout_, *min_id).ms;
    gauges_.migration_floor_ms.store(*floor_ms, std::memory_order_relaxed);
    spdlog::info("migration floor: no ID at or below {} (coordinator.min_id; time unit of {})",
                 *min_id, format_iso8601_ms(*floor_ms));
  }
  static_worker_ = std::make_unique<coord::StaticWorker>(
      state_dir_of(config_), config_.coordinator.static_worker_id, layout_, config_.generator,
      config_.coordinator.persist_interval, floor_ms);
  if (auto started = static_worker_->start(worker_); !started) {
    spdlog::critical("{}", started.error());
    return false;
  }
  return true;
}

bool Daemon::listen() {
  auto bound = server_.listen();
  if (!bound) {
    spdlog::critical("{}", bound.error());
    return false;
  }
  bound_ = bound.value();
  bound_admin_ = server_.admin_endpoint();
  return true;
}

void Daemon::stop_on(StopSignals& signals) {
  signals.start(
      [this](int) { boost::asio::post(server_.main_context(), [this] { begin_stop(); }); },
      // A second signal within the delay: stop accepting now.
      [this](int) {
        boost::asio::post(server_.main_context(), [this] {
          if (shutdown_delay_.cancel() > 0) spdlog::info("the shutdown delay is cut short");
          stop_serving();
        });
      });
}

void Daemon::begin_stop() {
  // /ready says 503 from here on; a load balancer that probes it (or
  // Kubernetes, which takes a terminating pod out of its Services a moment
  // after it sends SIGTERM) stops sending requests here while they are
  // still answered, so no client meets a refused connection.
  stopping_.store(true, std::memory_order_release);
  const auto delay = config_.http.shutdown_delay;
  // No delay when nothing is served any more (a fatal error came first).
  if (delay.count() <= 0 || serving_stopped_) return stop_serving();
  spdlog::info(
      "stopping: /ready answers 503; requests are still served for {} ms "
      "(http.shutdown_delay_ms), then the connections drain",
      delay.count());
  server_.close_after_reply();
  shutdown_delay_.expires_after(delay);
  shutdown_delay_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) stop_serving();
  });
}

void Daemon::stop_serving() {
  serving_stopped_ = true;
  shutdown_delay_.cancel();
  notifier_.stop("stopping: draining connections, then giving the worker ID back");
  if (tls_reloader_) tls_reloader_->stop();
  server_.stop();
}

bool Daemon::start_coordination() {
  if (!coordinated_) {
    lease_.grant_indefinitely();  // static mode owns its worker ID from the start
    return true;
  }
  auto options = coordinator_options(config_, bound_->port());
  // Its heartbeats tell the sequences' periods what ZooKeeper's clock reads.
  if (sequences_) options.zookeeper_clock = &sequences_->zookeeper_clock;
  coordinator_ = std::make_unique<coord::Coordinator>(
      std::move(options), layout_, worker_, lease_, gauges_,
      [this](const std::string& why, bool permanent) {
        exit_code_ = permanent ? kExitConflict : kExitFailure;
        notifier_.stop("failed: " + why);
        server_.stop();
        // A shutdown delay under way ends too (its timer would keep the
        // main loop, and so the exit, waiting for it).
        boost::asio::post(server_.main_context(), [this] { stop_serving(); });
      });
  if (auto started = coordinator_->start(); !started) {
    spdlog::critical("{}", started.error());
    return false;
  }
  return true;
}

void Daemon::start_sequences() {
  if (!sequences_) return;
  const auto& q = config_.sequences;
  const auto me = state::OwnerToken::fresh(default_advertise(bound_->port()), bound_->port());
  coord::SequenceSupplierOptions options{
      .zookeeper = zookeeper_settings(config_),
      .root = config_.zookeeper.root,
      .run = me.instance,
      .owner = me.describe(),
      .sizing = {q.segment_duration, q.max_step, static_cast<double>(q.refill_at_percent) / 100.0},
      .max_skew = config_.coordinator.max_skew,
      .restore_grace = config_.coordinator.restore_grace};
  // Every mode notices a loss of ZooKeeper's data and freezes (DESIGN.md
  // rule 9): static mode has no coordinator to fence the cluster, so the
  // supplier freezes its sequences itself.
  if (coordinator_) {
    options.history = &coordinator_->history();
  } else {
    static_history_ = std::make_unique<coord::ClusterHistory>();
    static_history_->on_report(
        [this] { coord::publish_loss(gauges_, static_history_->last_loss()); });
    options.history = static_history_.get();
    options.settles_history = true;
  }
  // One session a daemon: the sequences' requests go over the coordinator's.
  if (coordinator_) {
    options.shared_session = [coordinator = coordinator_.get()] { return coordinator->session(); };
    // A strict sequence's owner is a held worker ID, under its lease.
    options.owner_identity =
        [coordinator = coordinator_.get(), address = owner_address(config_, *bound_),
         tls = config_.http.tls != nullptr]() -> std::optional<coord::StrictOwner> {
      const auto held = coordinator->held_worker();
      if (!held) return std::nullopt;
      return coord::StrictOwner{held->worker_id, held->node, held->token, address, false, tls};
    };
    options.lease = &lease_;
    // Before the server runs (serve()): its threads read the pointer.
    forwarder_ = std::make_unique<http::StrictForwarder>(
        owner_address(config_, *bound_), config_.http.tls != nullptr, forwarding_tls(config_.http));
    router_.forwarder = forwarder_.get();
    options.reclaim_after = config_.coordinator.reclaim_after;
    options.safety_margin = config_.coordinator.safety_margin;
  }
  // The coordinator holds the state directory's lock by now: the run named
  // there is over if it ran in this boot from this very directory.
  const std::string dir = state_dir_of(config_);
  if (auto previous = state::swap_sequence_run(dir, me.instance)) {
    const auto& before = previous.value();
    if (before && before->proven_over) {
      options.previous_run = before->run;
    } else if (before) {
      spdlog::warn(
          "sequences: {}/sequence-run names run {}, but {}: nothing proves that run over (it may "
          "be a daemon still running from the original directory, cut off from ZooKeeper), so "
          "its holder node is kept; once that run is gone for good: snowflaked seq forget {}",
          dir, before->run, before->why_not, before->run);
    }
  } else {
    spdlog::warn("sequences: {}; a holder node left by a killed run is not deleted",
                 previous.error());
  }
  supplier_ = std::make_unique<coord::SequenceSupplier>(std::move(options), *sequences_);
  supplier_->start();
  spdlog::info(
      "sequences: served from {} (ranges for about {} s each, at most {}; the next at {} % used)",
      config_.zookeeper.root, q.segment_duration.count(), q.max_step, q.refill_at_percent);
}

void Daemon::start_leases() {
  if (!config_.leases.enabled || !coordinator_) return;
  const auto& co = config_.coordinator;
  lease_service_ = std::make_unique<coord::LeaseService>(coord::LeaseServiceOptions{
      .pool = coord::LeasePoolSettings::cluster(config_.zookeeper.root, layout_,
                                                co.safety_margin + co.max_skew,
                                                config_.leases.reserved_worker_ids),
      .named = {.configured = config_.leases.pools,
                .new_pools = config_.leases.new_pools,
                .new_pool_max_worker_bits = config_.leases.new_pool_max_worker_bits,
                .max_pools = config_.leases.max_pools,
                .reclaim_after = co.reclaim_after,
                .reap_every = std::max(std::chrono::milliseconds(1'000), co.reclaim_after / 3)},
      .pool_seen = [metrics = &metrics_](
                       const std::string& pool, std::uint32_t size,
                       std::uint32_t in_use) { metrics->set_lease_pool(pool, size, in_use); },
      .session = [coordinator = coordinator_.get()] { return coordinator->session(); },
      .own_lease = &lease_,
      .clock = &SystemClock::instance(),
      .max_wait = co.max_boot_wait,
      .restore_grace = co.restore_grace});
  lease_desk_ = [service = lease_service_.get()](LeaseRequest request) {
    return service->submit(std::move(request));
  };
  // Before the server runs (serve()): its threads read these.
  router_.leases = &lease_desk_;
  router_.lease_limits = {config_.leases.min_duration, config_.leases.max_duration};
  spdlog::info("leases: worker IDs of {} leased to other processes for {} to {} ms",
               config_.zookeeper.root, config_.leases.min_duration.count(),
               config_.leases.max_duration.count());
}

void Daemon::start_notifier() {
  notifier_.start();
  const auto watchdog = notifier_.watchdog_timeout();
  if (watchdog.count() <= 0) return;
  const auto limit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(watchdog).count() / 2;
  spdlog::info("systemd watchdog {} ms: pinging every {} ms while healthy", limit_ms * 2,
               notifier_.check_period().count());
  const auto zk_step_ms =
      (config_.zookeeper.session_timeout + config_.zookeeper.connect_timeout).count();
  if (coordinated_ && zk_step_ms >= limit_ms) {
    spdlog::warn(
        "WatchdogSec= ({} ms) is short for ZooKeeper's timeouts: one heartbeat step may "
        "take session_timeout_ms + connect_timeout_ms ({} ms), more than half of it",
        limit_ms * 2, zk_step_ms);
  }
}

void Daemon::start_tls_reloader() {
  if (!config_.http.tls) return;
  const auto& h = config_.http;
  // Served all the same (an expired certificate is refused by clients, not
  // by us, and a rotation may be on its way), but said where it is seen.
  const auto left_s = h.tls->not_after_s - SystemClock::instance().wall_ms() / 1000;
  if (left_s < kTlsExpiryWarning.count()) {
    spdlog::warn("TLS: the certificate in {} {} {}: clients will refuse it", h.tls_files.cert_file,
                 left_s < 0 ? "expired" : "expires", format_iso8601_ms(h.tls->not_after_s * 1000));
  }
  tls_reloader_ = std::make_unique<http::TlsReloader>(
      server_.main_context(), h.tls_files, *h.tls, h.tls_reload_interval, metrics_.tls(),
      [this](http::TlsContexts contexts) { server_.replace_tls(std::move(contexts)); });
  // On the main loop, as its checks and stop() are: a stop may already be
  // under way there (a signal during start-up), and then it never starts.
  boost::asio::post(server_.main_context(), [this] {
    if (!serving_stopped_) tls_reloader_->start();
  });
}

ServiceCondition Daemon::service_condition(std::chrono::milliseconds limit) {
  ServiceCondition now{http::ready_to_issue(router_), http::state_line(router_), std::nullopt};
  const auto silence = server_.event_loop_silence();
  server_.probe_event_loops();
  if (silence > limit) {
    now.unhealthy =
        fmt::format("an HTTP event loop has not run for {} ms",
                    std::chrono::duration_cast<std::chrono::milliseconds>(silence).count());
  } else if (coordinator_ && !coordinator_->heartbeat_thread_healthy(limit)) {
    now.unhealthy = fmt::format(
        "the heartbeat thread has ended, or made no progress (one step, or past the end of a "
        "wait) for over {} ms",
        limit.count());
  }
  // Not ready while the cluster's fence runs: systemd's start may wait for
  // its end (a new cluster's outlasts TimeoutStartSec with the defaults).
  const auto fence_until = gauges_.fence_until_ms.load(std::memory_order_relaxed);
  const auto wall_now = SystemClock::instance().wall_ms();
  if (!now.ready && fence_until > wall_now) {
    now.not_ready_for = std::chrono::milliseconds(fence_until - wall_now);
  }
  return now;
}

void Daemon::log_started() const {
  const auto address = bound_->address();
  const auto admin =
      bound_admin_ ? fmt::format(", operators' routes on admin listener {}{}{}:{}",
                                 bound_admin_->address().is_v6() ? "[" : "",
                                 bound_admin_->address().to_string(),
                                 bound_admin_->address().is_v6() ? "]" : "", bound_admin_->port())
                   : std::string();
  const auto& tls = config_.http.tls;
  const auto tls_text =
      tls ? fmt::format(", TLS on every listener{} (certificate {}, serial {}, expires {})",
                        config_.http.admin_client_ca_file.empty()
                            ? ""
                            : ", client certificates on the admin listener",
                        tls->subject, tls->serial, format_iso8601_ms(tls->not_after_s * 1000))
          : std::string();
  const auto& f = config_.forms;
  const auto forms = f.default_form == IdForm::plain && f.by_tag.empty()
                         ? std::string()
                         : fmt::format(", IDs {} by default ({} tag(s) of their own)",
                                       to_string(f.default_form), f.by_tag.size());
  spdlog::info(
      "snowflaked {} started: listening on {}{}{}:{} with {} io thread(s){}{}; service {}, "
      "worker {} ({}), layout {}{}, log level {}",
      kVersion, address.is_v6() ? "[" : "", address.to_string(), address.is_v6() ? "]" : "",
      bound_->port(), threads_, admin, tls_text, config_.service,
      coordinated_ ? std::string("from ZooKeeper")
                   : std::to_string(config_.coordinator.static_worker_id),
      to_string(config_.coordinator.type), layout_.describe(), forms, config_.log_level);
}

int Daemon::serve() {
  log_started();
  server_.run();
  // Drained: nothing can be issued any more; give the worker ID back, and
  // each sequence's unused rest.
  if (supplier_) supplier_->stop();
  // Before the session goes: what is queued is answered (to nobody).
  if (lease_service_) lease_service_->stop();
  if (coordinator_) coordinator_->shutdown();
  if (static_worker_) static_worker_->shutdown();
  if (const IdGenerator* g = worker_.current()) {
    spdlog::info("stopped; high-water mark {}", format_iso8601_ms(g->high_water_mark_ms()));
  }
  return exit_code_.load();
}

}  // namespace

int run_daemon(const DaemonOptions& options) {
  auto loaded = load_daemon_config(options);
  if (!loaded) return kExitUsage;
  configure_logging(loaded->config.log_level);
  // Before any thread starts: every thread inherits the blocked signals.
  StopSignals stop_signals;
  Daemon daemon(std::move(loaded->config), loaded->endpoint, std::move(loaded->tls));
  // The signals' thread ends before the daemon it posts to is destroyed (a
  // signal in the last moments, on any path out of here).
  struct SignalsEndFirst {
    StopSignals& signals;
    ~SignalsEndFirst() { signals.stop(); }
  } signals_end_first{stop_signals};
  if (!daemon.start_static_worker() || !daemon.listen()) return kExitFailure;
  daemon.stop_on(stop_signals);
  if (!daemon.start_coordination()) return kExitFailure;
  daemon.start_sequences();
  daemon.start_leases();
  daemon.start_notifier();
  daemon.start_tls_reloader();
  return daemon.serve();
}

}  // namespace snowflake
