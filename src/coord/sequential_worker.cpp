#include "snowflake/coord/sequential_worker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace snowflake::coord {

namespace {

constexpr std::size_t kSequenceDigits = 10;  // ZooKeeper's %010d suffix

}  // namespace

SequentialWorker::SequentialWorker(std::string root, std::string name, std::uint32_t max_worker_id)
    : forever_(std::move(root) + "/forever"), name_(std::move(name)), max_worker_id_(max_worker_id) {
  const auto colon = name_.rfind(':');
  host_ = name_.substr(0, colon);
  port_ = static_cast<std::uint32_t>(std::stoul(name_.substr(colon + 1)));
}

SequentialData SequentialWorker::data(std::int64_t now_ms, std::int64_t hwm) const {
  return {host_, port_, now_ms, hwm};
}

std::optional<std::pair<std::string, std::uint64_t>> SequentialWorker::find_ours(
    const std::vector<std::string>& children) const {
  std::optional<std::pair<std::string, std::uint64_t>> best;
  const std::string prefix = name_ + "-";
  for (const auto& child : children) {
    if (child.size() != prefix.size() + kSequenceDigits || !child.starts_with(prefix)) continue;
    std::uint64_t seq = 0;
    const char* first = child.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, child.data() + child.size(), seq);
    if (ec != std::errc() || end != child.data() + child.size()) continue;
    if (!best || seq < best->second) best = {child, seq};
  }
  return best;
}

Result<SequentialClaim, CoordError> SequentialWorker::acquire(ZkSession& zk, std::int64_t now_ms) {
  if (auto made = zk.ensure_path(forever_); !made) return CoordError::from(made.error());
  // Bounded: a lost connection during the create is resolved by listing again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto children = zk.children(forever_);
    if (!children) return CoordError::from(children.error());
    auto ours = find_ours(children.value());
    std::int64_t floor = 0;
    if (!ours) {
      auto created = zk.create(forever_ + "/" + name_ + "-", encode(data(now_ms, 0)),
                               CreateMode::persistent_sequential);
      if (!created) {
        const auto code = created.error().code;
        // The create may have happened: the next listing tells.
        if (code == ZkErrc::connection_loss || code == ZkErrc::operation_timeout) continue;
        return CoordError::from(created.error());
      }
      continue;  // list again: picks the lowest of ours, should a lost create have made two
    }
    const std::string path = forever_ + "/" + ours->first;
    if (ours->second > max_worker_id_) {
      return CoordError{CoordErrc::workers_exhausted,
                        fmt::format("worker IDs exhausted: {} has number {}, above the layout's "
                                    "largest worker ID {}; use the recycle strategy "
                                    "(coordinator.type \"recycle\") or more layout.worker_bits",
                                    path, ours->second, max_worker_id_)};
    }
    auto node = zk.get(path);
    if (!node) return CoordError::from(node.error());
    if (const auto old = decode_sequential(node.value().data)) floor = std::max(old->hwm, old->ts);
    auto written = zk.set(path, encode(data(now_ms, floor)), node.value().stat.version);
    if (!written) {
      if (written.error().code == ZkErrc::bad_version) continue;  // someone wrote meanwhile
      return CoordError::from(written.error());
    }
    return SequentialClaim{static_cast<std::uint32_t>(ours->second), path, floor,
                           written.value().mtime_ms};
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("could not settle our node under {} (connection kept failing)", forever_)};
}

Result<NodeStat, CoordError> SequentialWorker::heartbeat(ZkSession& zk, const SequentialClaim& claim,
                                                         std::int64_t now_ms, std::int64_t hwm) {
  // Any version: the node is ours for good, and a lost write is simply
  // repeated by the next heartbeat.
  auto written = zk.set(claim.path, encode(data(now_ms, hwm)), -1);
  if (!written) {
    if (written.error().code == ZkErrc::no_node) {
      return CoordError{CoordErrc::lost, fmt::format("{} was deleted", claim.path)};
    }
    return CoordError::from(written.error());
  }
  return written.value();
}

}  // namespace snowflake::coord
