#!/usr/bin/env bash
# What surviving ZooKeeper's data loss costs (tests/bench/lost_data.py says
# how): the first start of a new cluster before and after cluster
# identities, in the same run, and the window a restore without the
# runbook's command leaves. Release builds of this tree (build/bench) and of
# the baseline revision (build/bench-baseline; default: the one before
# cluster identities came in), real ZooKeeper servers. A few minutes.
# Usage: scripts/bench-lost-data.sh [--baseline-rev REV] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --baseline-rev) rev=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -z "$rev" ]; then
  added=$(git log --follow --format=%H --diff-filter=A -1 -- src/cluster/cluster_identity.cpp)
  rev=${added:+$added^}
fi
[ -n "$rev" ] || { echo "bench-lost-data: no baseline revision (give --baseline-rev)" >&2; exit 2; }
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
src=$(mktemp -d)
trap 'git worktree remove --force "$src" >/dev/null 2>&1 || rm -rf "$src"' EXIT
git worktree add --detach -q "$src" "$rev"
rm -rf build/bench-baseline  # configured from another worktree's path last time
bash "$src/scripts/build.sh" "$PWD/build/bench-baseline" -DCMAKE_BUILD_TYPE=Release \
  -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
echo "baseline: $(git rev-parse --short "$rev"), this tree: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with changes)')"
exec /usr/bin/python3 tests/bench/lost_data.py build/bench/snowflaked \
  --baseline build/bench-baseline/snowflaked "${args[@]}"
