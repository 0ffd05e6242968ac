#!/usr/bin/env bash
# Runs a command while every core is kept busy by other work at nice 10, as
# on a CI machine that builds something else beside the tests: a test that
# passes only on an idle machine fails here (docs/testing.md, "On a busy
# machine"). The busy loops end with the command.
#   bash scripts/busy-cores.sh bash scripts/test.sh --asan
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: scripts/busy-cores.sh COMMAND [ARGS...]" >&2; exit 2; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$(nproc)"); do
  nice -n 10 bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "busy-cores: $(nproc) busy loop(s) at nice 10 beside: $*"
"$@"
