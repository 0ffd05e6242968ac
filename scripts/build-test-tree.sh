#!/usr/bin/env bash
# Builds build/test: everything, tests and benchmarks included, with
# AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors. The
# test suite (scripts/test.sh) and the chaos runs (scripts/chaos.sh) share it.
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -g1: what ASan's authors advise (fast enough, exact stack traces with
# file:line), and half the compile time of -O2 -g on Beast's templates.
bash scripts/build.sh build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSNOWFLAKE_SANITIZE=ON \
  -DSNOWFLAKE_WERROR=ON -DSNOWFLAKE_BUILD_BENCH=ON
