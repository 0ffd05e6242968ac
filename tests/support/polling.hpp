#pragma once
// Waiting for a state in tests: poll with a deadline, never a fixed sleep.

#include <chrono>
#include <thread>

namespace snowflake::test {

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds within = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace snowflake::test
