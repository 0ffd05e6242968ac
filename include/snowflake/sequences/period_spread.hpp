#pragma once
// When, around a period's boundary, this daemon acts on it: the next
// period's first range taken before the boundary, the period over let go of
// after it. Every daemon of a fleet would otherwise do both at one instant
// for every periodic tag (midnight in every time zone used): a burst on
// ZooKeeper of a request or more per daemon and tag. Each run places itself
// in a window by a hash of its run name and the period's name, the same on
// every pass of its supplier, another for each run and period: the fleet's
// requests spread evenly over the window (tests/bench/day_turn.py measures
// it). Pure.

#include <cstdint>
#include <string_view>

namespace snowflake {

// The window the first range of the next period is taken in: from 120 s
// before its boundary to 30 s before (no request waits for ZooKeeper at the
// boundary; 30 s leaves a ZooKeeper that answers slowly time to answer).
// Its width sets how many daemons race on a period's node each second: over
// 30 s, 1,000 daemons with 8 daily tags kept ZooKeeper saturated and lost
// about 9 takes in 10 (a range cost some 20 requests; docs/CONTRIBUTING.md,
// "Benchmarks", the day's turn).
inline constexpr std::int64_t kPeriodLeadMaxMs = 120'000;
inline constexpr std::int64_t kPeriodLeadMinMs = 30'000;
// The window a period over is let go of in: from 30 s past its end plus the
// skew bound to 45 s past, before anyone may remove its node (at
// kPeriodRemovalMarginMs, 60 s past: sequence_store/sequence_node.hpp).
// Narrower with a wide skew bound: a daemon whose clock lags by the bound
// reaches the window's end that much later by ZooKeeper's clock, and must
// still let go before the removal (as with the fixed 30 s before, a bound
// of 30 s or more leaves no room, and such a daemon finds the node removed).
inline constexpr std::int64_t kLetGoMarginMinMs = 30'000;
inline constexpr std::int64_t kLetGoMarginMaxMs = 45'000;
inline constexpr std::int64_t kPeriodRemovalAfterMs = 60'000;  // kPeriodRemovalMarginMs

// How long before the boundary `run` takes the first range of `period`
// (its "<tag>@<key>"): in [kPeriodLeadMinMs, kPeriodLeadMaxMs].
std::int64_t period_lead_ms(std::string_view run, std::string_view period);

// How long past its end plus the skew bound `run` holds `period`: in
// [kLetGoMarginMinMs, kLetGoMarginMaxMs], and below kPeriodRemovalAfterMs
// less `max_skew_ms` where that leaves room above kLetGoMarginMinMs.
std::int64_t let_go_margin_ms(std::string_view run, std::string_view period,
                              std::int64_t max_skew_ms);

}  // namespace snowflake
