#pragma once
// Steady client load on every daemon of a chaos cluster: per daemon, one
// client asking for single IDs (two tags, JSON and text), one asking for
// batches (a third tag, random sizes), and one asking for the numbers of
// the dense sequences (kChaosSequences and kChaosDaily: one or a few at a
// time, JSON and text), each over a keep-alive connection, paced so a long run's record
// stays small. Every answer, and every request that got none, is written to
// the history as it happens.

#include <array>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "../support/http_client.hpp"
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
  // The highest number of kChaosSequences[i] any answer has carried so far.
  std::uint64_t highest_number(std::size_t i) const { return highest_[i].load(); }
  // The same of kChaosDaily, by period ("2026-11-30").
  std::map<std::string, std::uint64_t> daily_highest() const;

 private:
  void record_daily(Answer& a, const test::HttpReply& reply);
  void client(int daemon, int which, std::uint64_t seed);
  std::string next_target(int which, std::uint64_t n, std::mt19937_64& random,
                          std::size_t& sequence) const;

  ChaosCluster& cluster_;
  HistoryWriter& history_;
  std::atomic<bool> stopping_{false};
  std::array<std::atomic<std::uint64_t>, std::size(kChaosSequences)> highest_{};
  mutable std::mutex daily_mutex_;
  std::map<std::string, std::uint64_t> daily_highest_;
  std::vector<std::thread> threads_;
};

}  // namespace snowflake::chaos
