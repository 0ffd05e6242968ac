#include "snowflake/runtime/process_metrics.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace snowflake {

namespace {

// The fields of /proc/self/stat after the command name (which may hold
// spaces and parentheses: it ends at the last ')'), field 3 (state) first.
std::optional<std::vector<std::string>> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 22) return std::nullopt;
  return fields;
}

// The boot time, Unix seconds (btime in /proc/stat).
std::optional<long long> boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      long long seconds = 0;
      if (in >> seconds) return seconds;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::size_t open_fds() {
  std::error_code ec;
  std::size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n > 0 ? n - 1 : 0;  // the iterator's own descriptor is one of them
}

}  // namespace

std::string render_process_metrics() {
  const auto fields = stat_fields();
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (!fields || ticks <= 0 || page <= 0) return {};
  // Fields 14 (utime), 15 (stime), 22 (starttime, ticks after boot),
  // 23 (vsize, bytes), 24 (rss, pages); index 0 here is field 3.
  const auto field = [&](int number) { return std::stoull((*fields)[number - 3]); };
  fmt::memory_buffer out;
  const auto metric = [&out](std::string_view name, std::string_view type, std::string_view help,
                             auto value) {
    fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help,
                   type, value);
  };
  try {
    metric("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.",
           static_cast<double>(field(14) + field(15)) / static_cast<double>(ticks));
    metric("process_virtual_memory_bytes", "gauge", "Virtual memory size, in bytes.", field(23));
    metric("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.",
           field(24) * static_cast<unsigned long long>(page));
    if (const auto boot = boot_time()) {
      metric(
          "process_start_time_seconds", "gauge",
          "Start time of the process since the Unix epoch, in seconds.",
          static_cast<double>(*boot) + static_cast<double>(field(22)) / static_cast<double>(ticks));
    }
  } catch (const std::exception&) {
    return {};  // a /proc this code does not know: no process metrics at all
  }
  metric("process_open_fds", "gauge", "Number of open file descriptors.", open_fds());
  if (rlimit limit{}; ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    metric("process_max_fds", "gauge", "Maximum number of open file descriptors.",
           static_cast<unsigned long long>(limit.rlim_cur));
  }
  return fmt::to_string(out);
}

}  // namespace snowflake
