#!/usr/bin/env bash
# What ZooKeeper pays for fleets in the thousands, simulated on one machine
# (tests/bench/scale_sim.py says how): the real coordinator code of N daemons,
# a thousand to a process (tests/bench/coordinator_fleet.cpp), started at once
# against a real ZooKeeper, standalone or (--ensemble) a 3-node ensemble. A
# Release build; a few minutes per thousand daemons.
# Usage: scripts/bench-scale-sim.sh N [N ...] [--ensemble] [--heartbeat-ms MS]
#                                   [--idle-seconds S] [--per-process K] [--tick-ms MS]
#                                   [--waves] [--session-ms MS] [--check START,REST]
#                                   [--mass-stop K] [--day-turn T [--turn-lead S]]
#        scripts/bench-scale-sim.sh 100 1000 5000 --ensemble
#        scripts/bench-scale-sim.sh 1000 5000 --ensemble --waves --per-process 500
#        BASELINE_REV=HEAD~1 scripts/bench-scale-sim.sh 5000 --mass-stop 500 --heartbeat-ms 30000
#        BASELINE_REV=HEAD~1 scripts/bench-scale-sim.sh 1000 --day-turn 8 --turn-lead 420
# With BASELINE_REV, that revision's coordinator code (with this tree's
# coordinator_fleet.cpp, which compiles against either) is built too and
# simulated first with the same arguments: its table, then this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
build() {  # build SOURCE_DIR BUILD_DIR: the benchmarks on (coordinator_fleet is one), only these two
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
    -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null
  cmake --build "$2" -j"$(nproc)" --target snowflaked coordinator_fleet >/dev/null
}
if [ -n "${BASELINE_REV:-}" ]; then
  base=$(mktemp -d)
  trap 'git worktree remove --force "$base/src" >/dev/null 2>&1 || true; rm -rf "$base"' EXIT
  git worktree add --detach "$base/src" "$BASELINE_REV" >/dev/null 2>&1
  cp tests/bench/coordinator_fleet.cpp "$base/src/tests/bench/coordinator_fleet.cpp"
  build "$base/src" "$base/build"
  echo "== baseline: $BASELINE_REV ($(git rev-parse --short "$BASELINE_REV"))"
  /usr/bin/python3 tests/bench/scale_sim.py "$base/build/tests/bench/coordinator_fleet" \
    "$base/build/snowflaked" "$@" || echo "(the baseline's run failed: $?)"
  echo "== this tree"
fi
build . build/bench
/usr/bin/python3 tests/bench/scale_sim.py build/bench/tests/bench/coordinator_fleet \
  build/bench/snowflaked "$@"
