#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// A test that loses a multi's answer on purpose (integration/
// strict_owner_test.cpp) makes libzookeeper_mt leak that multi's completion
// list: the library's memory, not ours (tests/lsan.supp, which the daemons
// the tests start are given). LeakSanitizer asks this hook in a test
// executable started without LSAN_OPTIONS, as ctest starts it.
extern "C" const char* __lsan_default_suppressions() {  // NOLINT(bugprone-reserved-identifier)
  return "leak:zoo_amulti\n";
}
extern "C" const char* __lsan_default_options() {  // NOLINT(bugprone-reserved-identifier)
  return "print_suppressions=0";
}
