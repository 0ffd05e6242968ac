#include "wall_clock.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace snowflake::test {

std::int64_t wall_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t wall_us_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

constexpr auto kFakeTime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

std::map<std::string, std::string> preload() {
  sweep_faketime_leftovers();
  // real_timerfd.cpp first: Asio's monotonic timers are not libfaketime's.
  return {{"LD_PRELOAD", std::string(SNOWFLAKE_REAL_TIMERFD) + ":" + kFakeTime},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
          // A sanitized build must be told that a preloaded library comes first.
          {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
}

}  // namespace

WallClockOffset::WallClockOffset(std::filesystem::path file, const std::string& offset)
    : file_(std::move(file)) {
  set(offset);
}

std::map<std::string, std::string> WallClockOffset::env() const {
  auto e = preload();
  e["FAKETIME_TIMESTAMP_FILE"] = file_.string();
  e["FAKETIME_NO_CACHE"] = "1";
  return e;
}

std::map<std::string, std::string> WallClockOffset::jvm_env() const {
  auto e = env();
  e.erase("FAKETIME_NO_CACHE");
  e["FAKETIME_CACHE_DURATION"] = "1";
  e["FAKETIME_FORCE_MONOTONIC_FIX"] = "0";
  return e;
}

void WallClockOffset::set(const std::string& offset) {
  // Replaced whole, so the daemon never reads half a line.
  const auto temp = file_.string() + ".new";
  std::ofstream(temp) << offset << "\n";
  std::filesystem::rename(temp, file_);
}

void WallClockOffset::set_ms(std::int64_t offset_ms) { set(offset_text(offset_ms)); }

std::string offset_text(std::int64_t offset_ms) {
  // libfaketime takes fractions of a second.
  const std::int64_t magnitude = offset_ms < 0 ? -offset_ms : offset_ms;
  return (offset_ms < 0 ? "-" : "+") + std::to_string(magnitude / 1000) + "." +
         std::string(3 - std::to_string(magnitude % 1000).size(), '0') +
         std::to_string(magnitude % 1000);
}

void sweep_faketime_leftovers() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    std::string pid;
    for (const std::string prefix : {"faketime_shm_", "sem.faketime_sem_"}) {
      if (name.starts_with(prefix)) pid = name.substr(prefix.size());
    }
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::filesystem::exists("/proc/" + pid, ec)) continue;  // alive: its own
    std::filesystem::remove(entry.path(), ec);
  }
}

std::map<std::string, std::string> fixed_wall_clock_offset(const std::string& offset) {
  auto e = preload();
  e["FAKETIME"] = offset;
  return e;
}

}  // namespace snowflake::test
