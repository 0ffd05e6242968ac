// snowflaked: start-up order, signals and shutdown order. The parts it wires
// live in the core library; nothing here knows their details.

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "cli.hpp"
#include "logging.hpp"
#include "snowflake/clock.hpp"
#include "snowflake/config.hpp"
#include "snowflake/id_generator.hpp"
#include "snowflake/id_json.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/version.hpp"

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
    std::cerr << config.error().describe(cl.config_path.value_or("defaults")) << '\n';
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

int check_config(const CommandLine& cl) {
  const auto config = load_config(cl);
  if (!config) return kExitUsage;
  std::cout << *cl.config_path << ": OK (" << make_layout(*config).describe() << ")\n";
  return 0;
}

int run_daemon(const CommandLine& cl) {
  auto config = load_config(cl);
  if (!config) return kExitUsage;
  if (cl.log_level) {
    if (!is_log_level(*cl.log_level)) {
      std::cerr << "--log-level: must be one of trace, debug, info, warn, error, critical, off\n";
      return kExitUsage;
    }
    config->log_level = *cl.log_level;
  }
  configure_logging(config->log_level);

  // Block the stop signals before any thread starts, so that every thread
  // inherits the mask and only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const IdLayout layout = make_layout(*config);
  const std::uint32_t worker_id = config->coordinator.static_worker_id;
  auto generator = IdGenerator::create(layout, worker_id, config->generator);
  if (!generator) {
    spdlog::critical("cannot start the generator: {} ({})", generator.error().message(),
                     to_string(generator.error().code));
    return kExitFailure;
  }
  spdlog::info("snowflaked {} started: service {}, worker {} ({}), layout {}", kVersion,
               config->service, worker_id, config->coordinator.type, layout.describe());

  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("received {}, stopping; high-water mark {}", signal == SIGTERM ? "SIGTERM" : "SIGINT",
               generator.value()->high_water_mark_ms());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto cl = snowflake::parse_command_line(argc, argv);
  if (!cl) {
    std::cerr << "snowflaked: " << cl.error() << "\n\n" << snowflake::usage_text();
    return kExitUsage;
  }
  switch (cl.value().action) {
    case Action::help: std::cout << snowflake::usage_text(); return 0;
    case Action::version: std::cout << "snowflaked " << snowflake::kVersion << '\n'; return 0;
    case Action::decode: return decode(cl.value());
    case Action::check_config: return check_config(cl.value());
    case Action::run: return run_daemon(cl.value());
  }
  return kExitFailure;
}
