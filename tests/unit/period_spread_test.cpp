// When a daemon takes the next period's first range and lets go of the
// period over (sequences/period_spread.hpp): each run at its own point of
// the window, so a fleet's requests at the day's turn spread over it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/sequences/period_spread.hpp"

using namespace snowflake;

namespace {

// Run names as the daemons make them: a random word per run.
std::string run_name(int i) { return "r" + std::to_string(1'000'003LL * i + 17); }

// The most points of `points` that fall in any one second.
int most_in_a_second(const std::vector<std::int64_t>& points) {
  std::map<std::int64_t, int> per_second;
  for (const auto p : points) ++per_second[p / 1000];
  int most = 0;
  for (const auto& [second, n] : per_second) most = std::max(most, n);
  return most;
}

}  // namespace

TEST_CASE("a run's point in each window is within it, and the same on every pass", "[period]") {
  for (int i = 0; i < 2000; ++i) {
    const std::string run = run_name(i);
    const auto lead = period_lead_ms(run, "invoice@2026-12-06");
    CHECK(lead >= kPeriodLeadMinMs);
    CHECK(lead <= kPeriodLeadMaxMs);
    CHECK(period_lead_ms(run, "invoice@2026-12-06") == lead);
    const auto let_go = let_go_margin_ms(run, "invoice@2026-12-05", 2000);
    CHECK(let_go >= kLetGoMarginMinMs);
    CHECK(let_go <= kLetGoMarginMaxMs);
    CHECK(let_go_margin_ms(run, "invoice@2026-12-05", 2000) == let_go);
  }
  // A daemon holds a period until it is let go of; nobody may remove its
  // node before then.
  STATIC_REQUIRE(kLetGoMarginMaxMs < coord::kPeriodRemovalMarginMs);
}

TEST_CASE(
    "a wide skew bound narrows the let-go's window: a lagging clock still lets go before "
    "the removal",
    "[period]") {
  // A daemon whose clock lags by the bound lets go, by ZooKeeper's clock,
  // at end + 2 x skew + margin; the node may go at end + skew + 60 s.
  for (const std::int64_t skew : {0, 2'000, 10'000, 20'000, 29'000, 40'000, 600'000}) {
    INFO(skew);
    std::int64_t most = 0;
    for (int i = 0; i < 500; ++i) {
      const auto margin = let_go_margin_ms(run_name(i), "invoice@2026-12-05", skew);
      CHECK(margin >= kLetGoMarginMinMs);
      most = std::max(most, margin);
    }
    if (skew + kLetGoMarginMinMs < coord::kPeriodRemovalMarginMs) {
      CHECK(skew + most < coord::kPeriodRemovalMarginMs);
    } else {
      CHECK(most == kLetGoMarginMinMs);  // as before the spread: no room either way
    }
  }
}

TEST_CASE("a fleet's takes and let-gos spread evenly over their windows", "[period]") {
  // 3,000 daemons: evenly spread, 33 a second over the lead's 90 s and 200
  // over the let-go's 15; all at one point would be 3,000.
  constexpr int kRuns = 3000;
  std::vector<std::int64_t> leads;
  std::vector<std::int64_t> let_gos;
  for (int i = 0; i < kRuns; ++i) {
    leads.push_back(period_lead_ms(run_name(i), "invoice@2026-12-06"));
    let_gos.push_back(let_go_margin_ms(run_name(i), "invoice@2026-12-05", 2000));
  }
  CHECK(most_in_a_second(leads) < 2 * kRuns * 1000 / (kPeriodLeadMaxMs - kPeriodLeadMinMs));
  CHECK(most_in_a_second(let_gos) < 2 * kRuns * 1000 / (kLetGoMarginMaxMs - kLetGoMarginMinMs));
}

TEST_CASE("one daemon's periodic tags turn at different points", "[period]") {
  // Eight daily tags of one daemon: not all at once either.
  std::vector<std::int64_t> leads;
  for (const char* tag : {"a", "b", "c", "d", "e", "f", "g", "h"}) {
    leads.push_back(period_lead_ms("r42", std::string(tag) + "@2026-12-06"));
  }
  std::sort(leads.begin(), leads.end());
  CHECK(std::unique(leads.begin(), leads.end()) - leads.begin() >= 6);
}
