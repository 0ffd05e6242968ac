#!/usr/bin/env bash
# What ZooKeeper pays for fleets in the thousands, simulated on one machine
# (tests/bench/scale_sim.py says how): the real coordinator code of N daemons,
# a thousand to a process (tests/bench/coordinator_fleet.cpp), started at once
# against a real ZooKeeper, standalone or (--ensemble) a 3-node ensemble. A
# Release build; a few minutes per thousand daemons.
# Usage: scripts/bench-scale-sim.sh N [N ...] [--ensemble] [--heartbeat-ms MS]
#                                   [--idle-seconds S] [--per-process K] [--tick-ms MS]
#                                   [--waves] [--session-ms MS] [--check START,REST]
#        scripts/bench-scale-sim.sh 100 1000 5000 --ensemble
#        scripts/bench-scale-sim.sh 1000 5000 --ensemble --waves --per-process 500
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
# The benchmarks on (coordinator_fleet is one); only these two are built.
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
cmake --build build/bench -j"$(nproc)" --target snowflaked coordinator_fleet >/dev/null
exec /usr/bin/python3 tests/bench/scale_sim.py build/bench/tests/bench/coordinator_fleet \
  build/bench/snowflaked "$@"
