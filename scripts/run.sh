#!/usr/bin/env bash
# Installs what is missing, builds a Release tree, starts a local ZooKeeper
# (scripts/zookeeper.sh) and runs snowflaked in the foreground in recycle
# mode (conf/recycle.json, 127.0.0.1:8080). Ctrl-C stops the daemon, which
# returns its worker ID to the pool; a ZooKeeper this script started is then
# stopped too. Extra arguments go to snowflaked instead of the default
# config (e.g. --config conf/local.json for a static worker, no ZooKeeper).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  >/dev/null
if [ $# -eq 0 ]; then set -- --config conf/recycle.json; fi
mkdir -p .local/state .local/state-sequential .local/state-static

if ! bash scripts/zookeeper.sh status | grep -q Mode; then
  bash scripts/zookeeper.sh start standalone
  trap 'bash scripts/zookeeper.sh stop' EXIT
fi
build/release/snowflaked "$@" &
daemon=$!
# Ctrl-C reaches the daemon directly (same process group); a TERM sent to
# this script is passed on. Either way, wait for it to finish draining.
trap 'kill -TERM "$daemon" 2>/dev/null || true' TERM
trap ':' INT
status=0
wait "$daemon" || status=$?
while kill -0 "$daemon" 2>/dev/null; do wait "$daemon" || status=$?; done
exit "$status"
