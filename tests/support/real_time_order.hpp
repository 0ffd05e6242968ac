#pragma once
// Real-time order for the e2e tests of strict sequences: each answer's
// numbers are above those of every answer received before its request was
// sent (the chaos checker says the same of a whole history: check_order.cpp).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace snowflake::test {

struct TimedAnswer {
  std::chrono::steady_clock::time_point sent, received;
  std::int64_t lowest = 0, highest = 0;  // the numbers it carried
};

struct OrderVerdict {
  std::size_t pairs = 0;  // (earlier answer, later request) pairs checked
  std::vector<std::string> violations;
};

inline OrderVerdict check_real_time_order(std::vector<TimedAnswer> answers) {
  OrderVerdict v;
  std::vector<TimedAnswer> by_received = answers;
  std::sort(answers.begin(), answers.end(),
            [](const auto& a, const auto& b) { return a.sent < b.sent; });
  std::sort(by_received.begin(), by_received.end(),
            [](const auto& a, const auto& b) { return a.received < b.received; });
  std::size_t received = 0;
  std::int64_t highest = INT64_MIN;
  for (const TimedAnswer& b : answers) {
    while (received < by_received.size() && by_received[received].received < b.sent) {
      highest = std::max(highest, by_received[received++].highest);
    }
    v.pairs += received;
    if (received > 0 && b.lowest <= highest) {
      v.violations.push_back(std::to_string(b.lowest) + " answered after " +
                             std::to_string(highest) + " was received");
    }
  }
  return v;
}

}  // namespace snowflake::test
