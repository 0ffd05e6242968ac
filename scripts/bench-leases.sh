#!/usr/bin/env bash
# Worker-ID leases for other processes: leases taken, renewed and given back
# a second, and the ZooKeeper requests each costs, against a daemon's own
# heartbeat step measured in the same run; tests/bench/leases.py says how.
# A Release build, a real ZooKeeper, one daemon; about half a minute.
# Usage: scripts/bench-leases.sh [--leases N] [--idle S]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/leases.py build/bench/snowflaked "$@"
