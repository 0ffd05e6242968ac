#include "logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdlib>

namespace snowflake {

bool is_log_level(const std::string& name) {
  static constexpr std::array kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  for (const char* level : kLevels) {
    if (name == level) return true;
  }
  return false;
}

void configure_logging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("snowflaked");
  spdlog::set_default_logger(logger);
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    spdlog::set_pattern("<%l> %v");
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace snowflake
