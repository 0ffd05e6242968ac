#pragma once
// Wiping a secret's bytes (a key, a token, the line read from its file)
// before the memory goes back to the allocator. A std::fill of a buffer
// about to be destroyed is a dead store the optimiser may drop;
// OPENSSL_cleanse is not.

#include <openssl/crypto.h>

#include <array>
#include <cstddef>
#include <string>

namespace snowflake {

inline void wipe(std::string& s) noexcept { OPENSSL_cleanse(s.data(), s.size()); }

template <std::size_t N>
void wipe(std::array<unsigned char, N>& a) noexcept {
  OPENSSL_cleanse(a.data(), a.size());
}

// Wipes `s` when the scope ends, however it ends (a config error throws).
class WipedOnExit {
 public:
  explicit WipedOnExit(std::string& s) noexcept : s_(s) {}
  ~WipedOnExit() { wipe(s_); }
  WipedOnExit(const WipedOnExit&) = delete;
  WipedOnExit& operator=(const WipedOnExit&) = delete;

 private:
  std::string& s_;
};

}  // namespace snowflake
