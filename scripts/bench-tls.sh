#!/usr/bin/env bash
# What TLS costs keep-alive clients: snowflaked plain and with TLS (a P-256
# certificate), one io thread each, GET /id by wrk on keep-alive
# connections, in alternating rounds; req/s and p50/p99 of each, and the
# ratio (tests/bench/tls.py says how). A Release build; about a minute.
#   BASELINE_REV=<git revision>: that revision's snowflaked is built too and
#   run plain in the same rounds (plain now against plain then).
# Usage: scripts/bench-tls.sh [--connections N] [--seconds S] [--rounds R]
#        BASELINE_REV=main scripts/bench-tls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
baseline=()
if [ -n "${BASELINE_REV:-}" ]; then
  # The baseline's sources from git (committed state only), built alike.
  rm -rf build/bench-baseline-src && mkdir -p build/bench-baseline-src
  git archive "$BASELINE_REV" | tar -x -C build/bench-baseline-src
  cmake -S build/bench-baseline-src -B build/bench-baseline -DCMAKE_BUILD_TYPE=Release \
    -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
  cmake --build build/bench-baseline -j"$(nproc)" --target snowflaked >/dev/null
  baseline=(--baseline build/bench-baseline/snowflaked)
fi
exec /usr/bin/python3 tests/bench/tls.py build/bench/snowflaked "${baseline[@]}" "$@"
