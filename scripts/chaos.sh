#!/usr/bin/env bash
# Hunts for duplicate IDs: a real ZooKeeper (standalone or a 3-node ensemble)
# and K snowflaked daemons on loopback, under steady load and a random fault
# schedule drawn from the seed (network stalls, delays, resets and lost
# replies; kill -9, SIGSTOP, SIGTERM and restarts; ZooKeeper servers killed
# and paused; wall clocks stepped and slewed; state dirs unwritable or full),
# then every answer checked. See docs/testing.md, "How we test uniqueness".
#
#   bash scripts/chaos.sh [--seed N] [--minutes M | --seconds S] [--daemons K] [--worker-bits B]
#                         [--ensemble] [--strategy recycle|sequential|static] [--out DIR]
#
# Defaults: a random seed (printed), 1 minute, 4 daemons, recycle, standalone.
# Prints the checker's report and the directory holding every log, the plan,
# the schedule as applied and the history; exits 1 if a rule broke. A seed
# replays the same fault plan: `--seed 1234` again.
# Disk-full faults need root (a tmpfs per state dir, in a private mount
# namespace that vanishes with the run); without it they are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build-test-tree.sh
exec build/test/tests/chaos_runner "$@"
