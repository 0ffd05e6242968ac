#pragma once
// The exposition format's line writer, for the files that render Metrics
// (metrics.cpp, metrics_leases.cpp).

#include <fmt/format.h>

#include <iterator>
#include <utility>

namespace snowflake {

// Writes one line of the exposition format per call.
struct Lines {
  fmt::memory_buffer& out;
  template <class... Args>
  void operator()(fmt::format_string<Args...> format, Args&&... args) const {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
    out.push_back('\n');
  }
};

}  // namespace snowflake
