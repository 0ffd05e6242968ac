#pragma once
// The fields of an ID, as tests read them back: by hand, with the layouts'
// constants named once here, so that a test checks the library's layout
// code against independent arithmetic rather than against itself.

#include <cstdint>

#include "snowflake/ids/layout.hpp"

namespace snowflake::test {

// Twitter's epoch (IdWorker.scala's twepoch), which Meituan Leaf keeps.
inline constexpr std::int64_t kTwitterEpochMs = 1'288'834'974'657;

// The default layout (and Leaf's): 41 time bits | 10 worker | 12 sequence.
inline constexpr int kDefaultWorkerShift = 12;
inline constexpr int kDefaultTimeShift = 22;

inline std::uint32_t default_layout_worker(std::uint64_t id) {
  return static_cast<std::uint32_t>((id >> kDefaultWorkerShift) & 1023);
}
inline std::uint32_t default_layout_sequence(std::uint64_t id) {
  return static_cast<std::uint32_t>(id & 4095);
}
// The time of an ID of the default layout (epoch 2025-01-01), as Unix ms.
inline std::int64_t default_layout_time_ms(std::uint64_t id) {
  return static_cast<std::int64_t>(id >> kDefaultTimeShift) + kDefaultEpochMs;
}
// The same for Leaf's layout, the default one on Twitter's epoch.
inline std::int64_t leaf_layout_time_ms(std::uint64_t id) {
  return static_cast<std::int64_t>(id >> kDefaultTimeShift) + kTwitterEpochMs;
}
// The largest ID Leaf's layout can give at `ms`: every worker, every sequence.
inline std::uint64_t leaf_largest_id_at(std::int64_t ms) {
  return (static_cast<std::uint64_t>(ms - kTwitterEpochMs) << kDefaultTimeShift) | 0x3fffff;
}

}  // namespace snowflake::test
