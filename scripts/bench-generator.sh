#!/usr/bin/env bash
# Builds a Release tree and runs the generator benchmark.
#   of_limit   : IDs/s over the layout's limit (4,096,000/s by default); goal >= 0.97
#   22 bits    : ns per ID when waiting is never the bound;              goal <= 25 ns
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
      -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
cmake --build build/bench -j"$(nproc)" --target bench_generator >/dev/null
exec build/bench/tests/bench/bench_generator "$@"
