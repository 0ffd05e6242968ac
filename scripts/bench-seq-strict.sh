#!/usr/bin/env bash
# Strict sequences, in one run: GET /seq of a strict tag on its owner
# against a per-daemon tag's, through a daemon that passes it on, and the
# time without an owner across a clean stop and a kill -9;
# tests/bench/seq_strict.py says how. A Release build, a real ZooKeeper,
# two daemons, wrk; about two minutes.
# Usage: scripts/bench-seq-strict.sh [--connections N] [--seconds S] [--rounds R]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/seq_strict.py build/bench/snowflaked "$@"
