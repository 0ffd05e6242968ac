#!/usr/bin/env bash
# How long a daemon with the default sequences config serves GET /seq/<tag>
# through a ZooKeeper outage (tests/bench/seq_outage.py says how): a Release
# build, a real ZooKeeper, a steady load, then ZooKeeper stopped until the
# first request goes unanswered. Takes as long as the buffer lasts (with the
# defaults 13.5 to 28.5 minutes) plus the warm-up; light on the CPU.
# Usage: scripts/bench-seq-outage.sh [--rate N] [--warmup S] [--max S]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/seq_outage.py build/bench/snowflaked "$@"
