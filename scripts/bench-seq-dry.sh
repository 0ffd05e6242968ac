#!/usr/bin/env bash
# GET /id latency alone, then while many clients ask for a dry sequence (no
# number buffered, ZooKeeper stopped but not yet given up on), in one run
# (tests/bench/seq_dry.py says how): a request waiting for a range must not
# hold up the event loop it came in on. A Release build, a real ZooKeeper,
# wrk; about 20 s.
# Usage: scripts/bench-seq-dry.sh [--connections N] [--seconds S] [--max-wait MS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/seq_dry.py build/bench/snowflaked "$@"
