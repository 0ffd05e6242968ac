#pragma once
// One daemon's own wall clock, moved by libfaketime while it runs: the
// daemon re-reads an offset ("+12s", "-3s", "+0") from a file on every clock
// read. Its monotonic clocks (MONOTONIC, BOOTTIME) stay real, as a step of
// NTP or an operator would leave them.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace snowflake::test {

class WallClockOffset {
 public:
  // The offset lives in `file` (created with `offset`).
  explicit WallClockOffset(std::filesystem::path file, const std::string& offset = "+0");

  // The environment that makes a daemon follow this offset.
  std::map<std::string, std::string> env() const;
  // The same for a JVM (ZooKeeper): it reads its clock all the time, so the
  // offset's file once a second; and libfaketime's fix of timed waits on
  // the monotonic clock off, else every JVM thread's wait returns at once
  // (a JVM spinning on each core).
  std::map<std::string, std::string> jvm_env() const;
  // Steps the daemon's wall clock to real time + `offset`, at once.
  void set(const std::string& offset);
  void set_ms(std::int64_t offset_ms);

 private:
  std::filesystem::path file_;
};

// An offset as libfaketime reads it: "+12.345", "-3.000".
std::string offset_text(std::int64_t offset_ms);

// This process's own (real) wall clock, in Unix ms and µs.
std::int64_t wall_ms_now();
std::int64_t wall_us_now();

// libfaketime leaves /dev/shm/faketime_shm_<pid> and sem.faketime_sem_<pid>
// behind a process killed (SIGKILL: the daemons tests kill, ZooKeeper's
// stop); the `faketime` command fails ("sem_open: File exists") once a new
// one gets such a pid. Removes those of processes that are gone; called
// before anything starts under libfaketime.
void sweep_faketime_leftovers();

// A wall clock off by a fixed `offset` for the daemon's whole life.
std::map<std::string, std::string> fixed_wall_clock_offset(const std::string& offset);

}  // namespace snowflake::test
