#include "snowflake/cluster/cluster_history.hpp"

#include <spdlog/spdlog.h>

namespace snowflake::coord {

std::string_view to_string(HistoryLoss kind) noexcept {
  switch (kind) {
    case HistoryLoss::wiped:
      return "wiped";
    case HistoryLoss::replaced:
      return "replaced";
    case HistoryLoss::rolled_back:
      return "rolled_back";
  }
  return "rolled_back";
}

ClusterHistory::ClusterHistory(std::optional<std::string> known_id,
                               std::function<void(const std::string&)> persist)
    : known_id_(std::move(known_id)), persist_(std::move(persist)) {}

std::optional<std::string> ClusterHistory::known_id() const {
  std::lock_guard lock(mutex_);
  return known_id_;
}

void ClusterHistory::learn(const std::string& id) {
  {
    std::lock_guard lock(mutex_);
    if (known_id_ == id) return;
    known_id_ = id;
  }
  if (persist_) persist_(id);
}

std::int64_t ClusterHistory::highest_zxid() const noexcept {
  return highest_zxid_.load(std::memory_order_acquire);
}

void ClusterHistory::saw(std::int64_t zxid) noexcept {
  std::int64_t known = highest_zxid_.load(std::memory_order_relaxed);
  while (zxid > known &&
         !highest_zxid_.compare_exchange_weak(known, zxid, std::memory_order_acq_rel)) {
  }
}

void ClusterHistory::on_report(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  on_report_ = std::move(callback);
}

bool ClusterHistory::report(HistoryLoss kind, std::string detail, std::int64_t now_ms) {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    if (open_) {
      spdlog::warn("ZooKeeper's history: also {} ({})", detail, to_string(kind));
      return false;
    }
    open_ = true;
    ++episodes_;
    spdlog::critical(
        "ZooKeeper lost some of the cluster's history ({}: {}): no ID or sequence number is "
        "handed out until the cluster is fenced (docs/operations.md, \"ZooKeeper lost or "
        "restored its data\")",
        to_string(kind), detail);
    last_ = HistoryLossReport{kind, std::move(detail), now_ms};
    // After a loss, zxids start over below ours: the ones seen before it say
    // nothing about the history from here on.
    highest_zxid_.store(0, std::memory_order_release);
    callback = on_report_;
  }
  if (callback) callback();
  return true;
}

void ClusterHistory::settle() {
  std::lock_guard lock(mutex_);
  open_ = false;
}

std::uint64_t ClusterHistory::episodes() const {
  std::lock_guard lock(mutex_);
  return episodes_;
}

bool ClusterHistory::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

std::optional<HistoryLossReport> ClusterHistory::last_loss() const {
  std::lock_guard lock(mutex_);
  return last_;
}

void publish_loss(CoordinationGauges& gauges, const std::optional<HistoryLossReport>& loss) {
  gauges.history_losses.fetch_add(1, std::memory_order_relaxed);
  if (!loss) return;
  gauges.cluster.update([&](ClusterWords& w) {
    w.loss_kind = std::string(to_string(loss->kind));
    w.loss_detail = loss->detail;
    w.loss_ms = loss->detected_ms;
  });
}

}  // namespace snowflake::coord
