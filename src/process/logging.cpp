#include "snowflake/process/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

namespace snowflake {

namespace {

// "%*": the syslog priority prefix journald reads from a stream ("<6>" for
// info), so `journalctl -p warning` and the colours work.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char* prefix = "<6>";
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        prefix = "<7>";
        break;
      case spdlog::level::info:
        prefix = "<6>";
        break;
      case spdlog::level::warn:
        prefix = "<4>";
        break;
      case spdlog::level::err:
        prefix = "<3>";
        break;
      case spdlog::level::critical:
        prefix = "<2>";
        break;
      default:
        break;
    }
    dest.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

}  // namespace

bool is_log_level(const std::string& name) {
  static constexpr std::array kLevels = {"trace", "debug",    "info", "warn",
                                         "error", "critical", "off"};
  for (const char* level : kLevels) {
    if (name == level) return true;
  }
  return false;
}

bool stderr_is_journal() {
  // systemd sets JOURNAL_STREAM to "<device>:<inode>" of the stream it
  // connected; a child whose stderr was redirected elsewhere must not match.
  // Read in main before any thread starts; nothing calls setenv.
  const char* stream = std::getenv("JOURNAL_STREAM");  // NOLINT(concurrency-mt-unsafe)
  if (stream == nullptr) return false;
  std::uintmax_t device = 0;
  std::uintmax_t inode = 0;
  if (std::sscanf(stream, "%" SCNuMAX ":%" SCNuMAX, &device, &inode) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return static_cast<std::uintmax_t>(st.st_dev) == device &&
         static_cast<std::uintmax_t>(st.st_ino) == inode;
}

void configure_logging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("snowflaked");
  spdlog::set_default_logger(logger);
  if (stderr_is_journal()) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%v");
    spdlog::set_formatter(std::move(formatter));
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_level(spdlog::level::from_str(level));
}

void print_error(std::string_view text) {
  const bool journal = stderr_is_journal();
  std::string out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    if (journal) out += "<3>";
    out.append(line);
    out += '\n';
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  std::cerr << out << std::flush;
}

}  // namespace snowflake
