#!/usr/bin/env bash
# GET /seq of a sequence that restarts each day: its latency steady, then
# across a local midnight (ZooKeeper's and the daemon's clocks set by
# libfaketime), in one run; tests/bench/seq_period.py says how. A Release
# build, a real ZooKeeper, wrk; about a minute.
# Usage: scripts/bench-seq-period.sh [--connections N] [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/seq_period.py build/bench/snowflaked "$@"
