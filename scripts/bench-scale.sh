#!/usr/bin/env bash
# What ZooKeeper pays for N daemons (tests/bench/scale.py says how): N real
# recycle daemons started at once against a real ZooKeeper, time to all
# ready, packets and writes per daemon during the start and at rest, from
# ZooKeeper's own mntr counters. A Release build; a minute or so per N.
# Usage: scripts/bench-scale.sh N [N ...] [--ensemble] [--heartbeat-ms MS] [--idle-seconds S]
#                                [--tick-ms MS]
#        scripts/bench-scale.sh 30 120 250
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
exec /usr/bin/python3 tests/bench/scale.py build/bench/snowflaked "$@"
