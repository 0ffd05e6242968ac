#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, builds everything with AddressSanitizer + UndefinedBehaviorSanitizer
# and warnings as errors (benchmarks too, so they keep compiling), and runs
# every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNOWFLAKE_SANITIZE=ON \
  -DSNOWFLAKE_WERROR=ON -DSNOWFLAKE_BUILD_BENCH=ON
cd build/test
ctest --output-on-failure -j"$(nproc)" "$@"
