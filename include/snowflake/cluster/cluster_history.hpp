#pragma once
// What this daemon knows of its cluster's history, and how it notices that
// ZooKeeper lost some of it (docs/design.md, "When ZooKeeper loses its
// data"). Shared by the coordinator and the sequence supplier (over the
// coordinator's session, or one of its own); thread-safe.
//
// ZooKeeper keeps what it acknowledged only while its disks do: a server
// wiped (a pod on an emptyDir, a replaced disk) or restored from an older
// copy comes back without some of it, and a daemon cut off meanwhile cannot
// tell that from an outage until it reaches ZooKeeper again. Then any of
// these gives it away:
//   - the root is missing, though this daemon knows the cluster (its state
//     directory names it): wiped;
//   - the root names another cluster, or none: made again by someone else;
//   - a write of ours is answered with a zxid at or below one we had seen
//     before sending it (ZooKeeper's zxids only grow): rolled back;
//   - our own node is gone (or another's) while our lease still ran, which
//     no reclaim may do; a sequence we hold a range of is gone, or its next
//     number is below the end of our range: rolled back.
// The first report of an episode stops the daemon issuing (IDs and
// sequence numbers) and fences the cluster (cluster_fence.hpp).

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/runtime/coordination_gauges.hpp"

namespace snowflake::coord {

enum class HistoryLoss : std::uint8_t {
  wiped,        // the root is gone
  replaced,     // the root was made again: another cluster ID, or none
  rolled_back,  // older than what we saw or wrote
};
std::string_view to_string(HistoryLoss kind) noexcept;

struct HistoryLossReport {
  HistoryLoss kind = HistoryLoss::rolled_back;
  std::string detail;            // what gave it away, for people
  std::int64_t detected_ms = 0;  // this machine's wall clock
};

class ClusterHistory {
 public:
  // `known_id`: the cluster this daemon's state directory names, if any.
  // `persist`: called (under no lock of ours) with each ID learned, to keep
  // it in the state directory.
  explicit ClusterHistory(std::optional<std::string> known_id = std::nullopt,
                          std::function<void(const std::string&)> persist = {});

  std::optional<std::string> known_id() const;
  // The root names `id`: known from now on (the first sight, or the cluster
  // that replaced ours once its loss is fenced).
  void learn(const std::string& id);

  // The highest zxid any of our sessions saw.
  std::int64_t highest_zxid() const noexcept;
  void saw(std::int64_t zxid) noexcept;
  // A write sent when the highest zxid seen was `before` was answered with
  // `written`: false if ZooKeeper's history is behind what we saw.
  static bool follows(std::int64_t before, std::int64_t written) noexcept {
    return before == 0 || written > before;
  }

  // Called (on the reporter's thread, under no lock of ours) at the first
  // report of each episode: the coordinator stops its IDs then.
  void on_report(std::function<void()> callback);
  // Reports a loss. Returns true for the first report of an episode (a
  // later report while one is open only adds to the log).
  bool report(HistoryLoss kind, std::string detail, std::int64_t now_ms);
  // The episode is over: the cluster is fenced and this daemon holds nothing
  // from before it.
  void settle();
  // Episodes so far (a metric), and whether one is open now.
  std::uint64_t episodes() const;
  bool open() const;
  std::optional<HistoryLossReport> last_loss() const;

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> known_id_;
  std::function<void(const std::string&)> persist_;
  std::function<void()> on_report_;
  std::optional<HistoryLossReport> last_;
  std::uint64_t episodes_ = 0;
  bool open_ = false;
  std::atomic<std::int64_t> highest_zxid_{0};
};

// A loss's episode as /status (`cluster.history_losses`, `cluster.last_loss`)
// and the metrics show it: counted once, its report in words. Every mode
// says so: the coordinator's, and a static daemon's supplier alone.
void publish_loss(CoordinationGauges& gauges, const std::optional<HistoryLossReport>& loss);

}  // namespace snowflake::coord
