#pragma once
// One reply counted among those in flight (sequences/replies.hpp) until the
// token is released: on being reset, assigned over or destroyed, on any
// thread. Move-only and free of allocation: a request for a sequence's
// numbers takes one on the hot path, so it is a pointer to the counter, not
// a shared_ptr with a deleter. A moved-from or default token counts nothing.

#include <atomic>
#include <cstdint>
#include <utility>

namespace snowflake {

class InFlightToken {
 public:
  InFlightToken() = default;
  // Takes over one count already added to *counted.
  explicit InFlightToken(std::atomic<std::int64_t>* counted) noexcept : counted_(counted) {}
  InFlightToken(InFlightToken&& other) noexcept
      : counted_(std::exchange(other.counted_, nullptr)) {}
  InFlightToken& operator=(InFlightToken&& other) noexcept {
    if (this != &other) {
      reset();
      counted_ = std::exchange(other.counted_, nullptr);
    }
    return *this;
  }
  InFlightToken(const InFlightToken&) = delete;
  InFlightToken& operator=(const InFlightToken&) = delete;
  ~InFlightToken() { reset(); }

  // Released after the reply is written: the count falls with release
  // order, so the drain that sees it fall sees the write done.
  void reset() noexcept {
    if (counted_) counted_->fetch_sub(1, std::memory_order_release);
    counted_ = nullptr;
  }
  explicit operator bool() const noexcept { return counted_ != nullptr; }

 private:
  std::atomic<std::int64_t>* counted_ = nullptr;
};

}  // namespace snowflake
