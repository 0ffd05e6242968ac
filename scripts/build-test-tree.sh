#!/usr/bin/env bash
# Builds a test tree with warnings as errors:
#   scripts/build-test-tree.sh        build/test: AddressSanitizer + UndefinedBehaviorSanitizer,
#                                     tests and benchmarks (the test suite and scripts/chaos.sh)
#   scripts/build-test-tree.sh tsan   build/tsan: ThreadSanitizer, the unit, integration and e2e tests
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -g1: what the sanitizers' authors advise (fast enough, exact stack
# traces with file:line), and half the compile time of -O2 -g on Beast's templates.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
        -DSNOWFLAKE_WERROR=ON)
case "${1:-asan}" in
  asan) bash scripts/build.sh build/test "${common[@]}" -DSNOWFLAKE_SANITIZE=ON -DSNOWFLAKE_BUILD_BENCH=ON ;;
  # What the TSan suite runs (unit, integration, e2e) and nothing more: not
  # the chaos runner, which only the ASan tree's tests use.
  tsan) cmake -S . -B build/tsan "${common[@]}" -DSNOWFLAKE_TSAN=ON -DSNOWFLAKE_BUILD_BENCH=OFF >/dev/null
        cmake --build build/tsan -j"$(nproc)" --target unit_tests integration_tests e2e_tests snowflaked ;;
  *) echo "build-test-tree: asan or tsan, not $1" >&2; exit 2 ;;
esac
