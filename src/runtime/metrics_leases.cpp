// Metrics of the worker-ID leases granted to other processes: counted by
// pool and event as the lease routes answer, the named pools' figures as the
// lease service's reaping passes see them, rendered with the rest
// (metrics.cpp).

#include <mutex>

#include "metrics_lines.hpp"
#include "snowflake/runtime/metrics.hpp"

namespace snowflake {

void Metrics::count_lease(const LeaseRequest& request, const LeaseCall::Outcome& outcome) noexcept {
  LeaseEvent event = LeaseEvent::refused;
  if (const auto* refusal = std::get_if<LeaseRefusal>(&outcome)) {
    if (refusal->why == LeaseRefusal::Why::lost || refusal->why == LeaseRefusal::Why::no_lease) {
      event = LeaseEvent::lost;
    }
  } else {
    switch (request.kind) {
      case LeaseRequest::Kind::take:
        event = LeaseEvent::taken;
        break;
      case LeaseRequest::Kind::renew:
        event = LeaseEvent::renewed;
        break;
      case LeaseRequest::Kind::give_back:
        event = LeaseEvent::given_back;
        break;
    }
  }
  std::string_view pool = request.pool.empty() ? kClusterLeasePool : request.pool;
  std::lock_guard lock(leases_mutex_);
  try {
    auto it = leases_.find(pool);
    if (it == leases_.end()) {
      // A pool gets its own series once a lease was granted from it (it
      // exists: leases.max_pools bounds them); a name anyone may send that
      // was never granted from is counted under kOtherLeasePools.
      if (std::holds_alternative<LeaseRefusal>(outcome)) pool = kOtherLeasePools;
      it = leases_.try_emplace(std::string(pool)).first;
    }
    ++it->second.events[static_cast<std::size_t>(event)];
  } catch (...) {  // NOLINT(bugprone-empty-catch): a count lost to a failed allocation
  }
}

void Metrics::set_lease_pool(const std::string& pool, std::uint32_t size,
                             std::uint32_t in_use) noexcept {
  std::lock_guard lock(leases_mutex_);
  try {
    auto& figures = leases_[pool];
    figures.size = size;
    figures.in_use = in_use;
  } catch (...) {  // NOLINT(bugprone-empty-catch): figures lost to a failed allocation
  }
}

std::vector<Metrics::LeasePoolSeen> Metrics::lease_pools_seen() const {
  std::vector<LeasePoolSeen> seen;
  std::lock_guard lock(leases_mutex_);
  for (const auto& [pool, figures] : leases_) {
    if (figures.size) seen.push_back({pool, *figures.size, figures.in_use});
  }
  return seen;
}

void Metrics::render_leases(fmt::memory_buffer& out) const {
  const Lines line{out};
  line(
      "# HELP snowflake_worker_leases_total Worker-ID lease requests of other processes' "
      "generators answered, by event: taken, renewed, given_back, lost (410: the holder must "
      "take a new one), refused (503).");
  line("# TYPE snowflake_worker_leases_total counter");
  std::map<std::string, LeasePoolFigures, std::less<>> pools;
  {
    std::lock_guard lock(leases_mutex_);
    pools = leases_;
  }
  pools.try_emplace(std::string(kClusterLeasePool));  // always: the alerts' zero
  for (const auto& [pool, figures] : pools) {
    for (std::size_t i = 0; i < kLeaseEvents.size(); ++i) {
      line("snowflake_worker_leases_total{{pool=\"{}\",event=\"{}\"}} {}", pool, kLeaseEvents[i],
           figures.events[i]);
    }
  }
  line(
      "# HELP snowflake_lease_pool_size Worker IDs of a named lease pool (leases.pools, or made "
      "on first use), as this daemon's last reaping pass of it saw; the cluster's own pool: "
      "snowflake_pool_size.");
  line("# TYPE snowflake_lease_pool_size gauge");
  for (const auto& [pool, figures] : pools) {
    if (figures.size) line("snowflake_lease_pool_size{{pool=\"{}\"}} {}", pool, *figures.size);
  }
  line(
      "# HELP snowflake_lease_pool_in_use Worker IDs of a named lease pool held by a lease, as "
      "this daemon's last reaping pass of it saw.");
  line("# TYPE snowflake_lease_pool_in_use gauge");
  for (const auto& [pool, figures] : pools) {
    if (figures.size) line("snowflake_lease_pool_in_use{{pool=\"{}\"}} {}", pool, figures.in_use);
  }
}

}  // namespace snowflake
