// `snowflaked pool status`'s word for a taken worker ID: what its owner may
// still do, as the reaper judges it.
#include <catch2/catch.hpp>

#include "snowflake/report/pool_status.hpp"

using namespace snowflake;
using namespace std::chrono_literals;

TEST_CASE("pool status: a taken worker ID is live, lease_expired, reclaimable or released",
          "[pool_status]") {
  report::PoolMember m;
  CHECK(report::owner_state(m, 5000ms) == "unknown");  // not our JSON
  m.owner_data = coord::InuseData{};
  m.owner_data->lease_ms = 3000;
  m.heartbeat_age_ms = 1000;
  CHECK(report::owner_state(m, 5000ms) == "live");
  m.heartbeat_age_ms = 4000;
  CHECK(report::owner_state(m, 5000ms) == "lease_expired");
  m.heartbeat_age_ms = 6000;
  CHECK(report::owner_state(m, 5000ms) == "reclaimable");
  // A clean stop's mark: returned at the reaper's next pass, however fresh.
  m.owner_data->released = true;
  m.owner_data->lease_ms = 0;
  m.heartbeat_age_ms = 10;
  CHECK(report::owner_state(m, 5000ms) == "released");
}
