#pragma once
// A worker-ID lease asked for over HTTP, between the route that reads the
// request (http/lease_routes.cpp) and the daemon's thread that answers it
// from ZooKeeper (workers/lease_service.hpp): what is asked, what comes
// back, and the call both sides share while the connection waits on its
// event loop.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "snowflake/base/clock.hpp"
#include "snowflake/sequences/pending_outcome.hpp"

namespace snowflake {

// The cluster's own pool's name in requests and metrics (a named pool may
// not take it).
inline constexpr std::string_view kClusterLeasePool = "cluster";
// The metrics' pool for requests naming a pool nothing was ever granted
// from: never a pool's name ([A-Za-z0-9._-] has no "~").
inline constexpr std::string_view kOtherLeasePools = "~other";
// The widest named pool: 65,536 nodes to fill.
inline constexpr int kMaxLeasePoolWorkerBits = 16;
// How long a connection waits for a lease request's answer; a take still
// queued after it is refused unserved (nobody would be told its worker ID).
inline constexpr auto kLeaseAnswerWait = std::chrono::seconds(5);

struct LeaseRequest {
  enum class Kind : std::uint8_t { take, renew, give_back };
  Kind kind = Kind::take;
  std::string holder;                        // take
  std::uint32_t worker_id = 0;               // renew, give back
  std::string token;                         // renew, give back
  std::chrono::milliseconds duration{0};     // take, renew: within the configured limits
  std::optional<std::int64_t> last_used_ms;  // renew, give back: the holder's last stamp
  // A named pool (lease_pool.hpp); empty: the cluster's own.
  std::string pool;
  // take: the named pool's worker ID bits, made with them on first use.
  std::optional<int> worker_bits;
  // A CosId machine's instanceId (cosid_routes.cpp): its lease is found by
  // it, not by worker ID and token (worker_id and token are ignored).
  std::string instance;
};

// A take's or a renewal's terms (a give-back's: the worker ID alone).
struct LeaseGrant {
  std::uint32_t worker_id = 0;
  std::chrono::milliseconds duration{0};  // counted from when the holder sent its request
  // The first Unix ms the holder may stamp, past anything an earlier holder
  // of the worker ID could have used, and the last under this grant.
  std::int64_t first_timestamp_ms = 0;
  std::int64_t max_timestamp_ms = 0;
  std::string token;  // a take's only
  // A named pool's bit width (its holders' layout is their own); 0: the
  // cluster's own pool, whose layout the answer spells out.
  int worker_bits = 0;
};

struct LeaseRefusal {
  enum class Why : std::uint8_t {
    lost,            // no such lease (any more), or renewed late: take a new one
    pool_exhausted,  // no free worker ID
    unavailable,     // not now (ZooKeeper, our own lease, a floor ahead): ask again
    no_pool,         // no named pool of that name, and none may be made
    pool_conflict,   // the named pool exists with another bit width
    no_lease,        // a CosId machine: its instance holds no lease there
  };
  Why why = Why::unavailable;
  std::string message;
};

class LeaseCall : public PendingOutcome<std::variant<LeaseGrant, LeaseRefusal>> {
 public:
  using Outcome = std::variant<LeaseGrant, LeaseRefusal>;
  explicit LeaseCall(LeaseRequest request)
      : request_(std::move(request)), asked_at_(BootClock::now()) {}
  const LeaseRequest& request() const noexcept { return request_; }
  // Whether the asker has stopped waiting (kLeaseAnswerWait since it asked).
  bool abandoned() const noexcept { return BootClock::now() >= answer_by(); }
  BootClock::time_point answer_by() const noexcept { return asked_at_ + kLeaseAnswerWait; }

 private:
  const LeaseRequest request_;
  const BootClock::time_point asked_at_;
};

// The durations a holder may ask for (leases.min_duration_ms, .max_duration_ms).
struct LeaseLimits {
  std::chrono::milliseconds min_duration{1'000};
  std::chrono::milliseconds max_duration{0};
};

// Where a route hands a request: the call it finishes later.
using LeaseDesk = std::function<std::shared_ptr<LeaseCall>(LeaseRequest)>;

}  // namespace snowflake
