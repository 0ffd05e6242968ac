#include "floor_confirmations.hpp"

#include <iostream>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/migration/raise_floor.hpp"
#include "snowflake/report/floor_report.hpp"

namespace snowflake::commands {

int await_floor_confirmations(coord::ZkSession& zk, const Config& config, std::int64_t floor_ms,
                              std::optional<std::chrono::milliseconds> timeout,
                              const std::string& confirmed) {
  const auto& co = config.coordinator;
  const auto patience =
      timeout.value_or(co.lease_timeout + co.safety_margin + std::chrono::seconds(10));
  const auto deadline = BootClock::now() + patience;
  for (;;) {
    const auto pending = migration::unconfirmed_owners(zk, config.zookeeper.root, co.type, floor_ms,
                                                       co.lease_timeout, co.safety_margin);
    if (!pending) {
      // An answer lost (a server failing, an election) is asked again
      // until the patience runs out: the fence has landed already, and a
      // command run again would only push it later.
      if (answer_lost(pending.error()) && BootClock::now() <= deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      return fail(kExitFailure, "cannot read the cluster's owners: " + pending.error().message);
    }
    if (pending.value().empty()) {
      std::cout << confirmed << '\n';
      return kExitOk;
    }
    if (BootClock::now() > deadline) {
      return fail(kExitFailure, report::to_text(pending.value(), patience));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace snowflake::commands
