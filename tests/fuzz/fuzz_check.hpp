#pragma once
// What a fuzz target asserts: a broken invariant is a finding, reported with
// the input's text and ended with abort(), which libFuzzer saves as a crash.

#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(condition, input)                                                         \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\ninput: %.*s\n", __FILE__, __LINE__, \
                   #condition, static_cast<int>((input).size()), (input).data());            \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

inline std::string_view as_text(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}
