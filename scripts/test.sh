#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, builds everything with AddressSanitizer + UndefinedBehaviorSanitizer
# and warnings as errors (benchmarks too, so they keep compiling), and runs
# every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# -O1 -g1: what ASan's authors advise (fast enough, exact stack traces with
# file:line), and half the compile time of -O2 -g on Beast's templates.
bash scripts/build.sh build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSNOWFLAKE_SANITIZE=ON \
  -DSNOWFLAKE_WERROR=ON -DSNOWFLAKE_BUILD_BENCH=ON
cd build/test
ctest --output-on-failure -j"$(nproc)" "$@"
