#!/usr/bin/env bash
# Builds a test tree with warnings as errors:
#   scripts/build-test-tree.sh        build/test: AddressSanitizer + UndefinedBehaviorSanitizer,
#                                     tests and benchmarks (the test suite and scripts/chaos.sh)
#   scripts/build-test-tree.sh tsan   build/tsan: ThreadSanitizer, the unit, integration and e2e tests
set -euo pipefail
cd "$(dirname "$0")/.."
# The TSan tree: -O1 -g1, what the sanitizers' authors advise (fast enough, exact stack
# traces with file:line), and half the compile time of -O2 -g on Beast's templates.
# The ASan + UBSan tree: -Og, GCC's optimisation for debugging. UBSan's checks
# at -O1 double the compile time of a file that uses Beast or nlohmann/json;
# -Og takes a third of it off (recycle_pool.cpp 22.5 s -> 14.3 s, server.cpp
# 24.2 s -> 16.4 s) and still optimises, so the daemons the tests start keep
# their pace. TSan's tree keeps -O1: TSan's own slowdown is the larger one.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNOWFLAKE_WERROR=ON)
flags() { echo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$1 -g1 -DNDEBUG"; }
case "${1:-asan}" in
  asan) bash scripts/build.sh build/test "${common[@]}" "$(flags -Og)" -DSNOWFLAKE_SANITIZE=ON \
          -DSNOWFLAKE_BUILD_BENCH=ON ;;
  # What the TSan suite runs (unit, integration, e2e) and nothing more: not
  # the chaos runner, which only the ASan tree's tests use.
  tsan) cmake -S . -B build/tsan "${common[@]}" "$(flags -O1)" -DSNOWFLAKE_TSAN=ON -DSNOWFLAKE_BUILD_BENCH=OFF >/dev/null
        cmake --build build/tsan -j"$(nproc)" --target unit_tests integration_tests e2e_tests snowflaked period_table ;;
  *) echo "build-test-tree: asan or tsan, not $1" >&2; exit 2 ;;
esac
