#!/usr/bin/env bash
# The client libraries (clients/): IDs a second per process through the
# buffer and from the leased generator, against the plain HTTP call in the
# same run; tests/bench/clients.py says how. A Release build, a real
# ZooKeeper, one daemon; about twenty seconds.
# Usage: scripts/bench-clients.sh [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
exec /usr/bin/python3 tests/bench/clients.py build/bench/snowflaked "$@"
