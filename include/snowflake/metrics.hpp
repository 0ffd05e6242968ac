#pragma once
// Counters for /metrics, cheap enough for every request: fixed arrays of
// relaxed atomics, and a per-tag map that stops growing at a cap so that
// random tags cannot grow memory (IDs of further tags are still counted, in
// one series without a tag label).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "snowflake/coordination_gauges.hpp"
#include "snowflake/id_generator.hpp"
#include "snowflake/lease.hpp"

namespace snowflake {

enum class Route : std::uint8_t { id, decode, health, ready, status, metrics, openapi, other };
inline constexpr std::size_t kRouteCount = 8;
std::string_view to_string(Route route) noexcept;

class Metrics {
 public:
  explicit Metrics(std::size_t max_tags);

  void count_request(Route route, unsigned status) noexcept;
  void count_ids(std::string_view tag, std::uint64_t n);

  // Prometheus text exposition format 0.0.4. The generator's and lease's
  // figures are read at render time rather than copied on every request.
  struct Snapshot {
    IdGenerator::Stats generator;
    LeaseState lease_state;
    std::optional<std::uint32_t> worker_id;  // none while no worker ID is owned
    std::string_view version;
    std::string_view service;
    const CoordinationGauges* coordination = nullptr;
  };
  std::string render(const Snapshot& snapshot) const;

 private:
  // Every status the service answers with; anything else lands in "other".
  static constexpr std::array<unsigned, 11> kStatuses = {200, 400, 404, 405, 408, 413,
                                                          414, 431, 500, 503, 0};
  static std::size_t status_index(unsigned status) noexcept;

  std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kRouteCount> requests_{};
  std::atomic<std::uint64_t> ids_total_{0};
  std::atomic<std::uint64_t> ids_untracked_tags_{0};

  const std::size_t max_tags_;
  mutable std::shared_mutex tags_mutex_;
  // Looks tags up by string_view, without building a std::string per request.
  struct TagHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  // Node-based map: the counters never move once inserted.
  std::unordered_map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>, TagHash,
                     std::equal_to<>>
      tags_;
};

}  // namespace snowflake
