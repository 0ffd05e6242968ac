#pragma once
// splitmix64's finaliser (Steele, Lea, Flood 2014): every input bit moves
// every output bit. Where a hash's output picks a place (a daemon's turn in
// a window, an owner among candidates), std::hash and FNV-1a keep some of
// their input's structure in the low bits, and names in a series (run-1,
// run-2, ...) would land in a pattern. Pure; its values never change (the
// strict owner's order is agreed by daemons of different versions).

#include <cstdint>

namespace snowflake {

constexpr std::uint64_t splitmix64_finalize(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One known value, so that an edit that changes them fails the build.
static_assert(splitmix64_finalize(0x9e3779b97f4a7c15ULL) == 0xe220a8397b1dcdafULL);

}  // namespace snowflake
