#pragma once
// Steady client load on every daemon of a chaos cluster: per daemon, one
// client asking for single IDs (two tags, JSON and text) and one asking for
// batches (a third tag, random sizes), each over a keep-alive connection,
// paced so a long run's record stays small. Every answer, and every request
// that got none, is written to the history as it happens.

#include <atomic>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "cluster.hpp"
#include "history.hpp"

namespace snowflake::chaos {

class HistoryWriter {
 public:
  HistoryWriter(const std::filesystem::path& path, const LayoutSettings& layout);
  void write(const Answer& a);
  std::uint64_t answers() const { return answers_.load(); }
  void flush();

 private:
  std::mutex mutex_;
  std::ofstream out_;
  std::atomic<std::uint64_t> answers_{0};
};

class ChaosLoad {
 public:
  ChaosLoad(ChaosCluster& cluster, HistoryWriter& history, std::uint64_t seed);
  ~ChaosLoad();
  void stop();

 private:
  void client(int daemon, int which, std::uint64_t seed);

  ChaosCluster& cluster_;
  HistoryWriter& history_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace snowflake::chaos
