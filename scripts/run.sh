#!/usr/bin/env bash
# Installs what building and running need (not the test toolchain), builds a
# Release tree and runs snowflaked in the foreground, by default in recycle
# mode (conf/recycle.json, 127.0.0.1:8080) with a local ZooKeeper that it
# starts (scripts/zookeeper.sh) unless one answers on 127.0.0.1:2181.
# Ctrl-C stops the daemon, which returns its worker ID to the pool; a
# ZooKeeper this script started is then stopped too. A cluster on the
# ZooKeeper it starts is vouched for as new (snowflaked cluster create).
#
# Arguments are added to the daemon's: `--log-level debug`, `--listen
# 127.0.0.1:9090`, or `--config conf/local.json` in place of the default
# config (static: no ZooKeeper is started). The environment's SNOWFLAKED_*
# settings apply as everywhere (docs/configuration.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --run
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  >/dev/null

config=
previous=
for arg in "$@"; do
  case $arg in
    --config=*) config=${arg#--config=} ;;
  esac
  case $previous in
    --config | -c) config=$arg ;;
  esac
  previous=$arg
done
if [ -z "$config" ]; then
  config=conf/recycle.json
  set -- --config "$config" "$@"
fi
# The config as the daemon will read it (exit 2 naming the key if it is
# wrong), and whether its mode needs ZooKeeper.
checked=$(build/release/snowflaked check-config "$config")
echo "$checked"
mkdir -p .local/state .local/state-sequential .local/state-static

case $checked in
  *": OK (static"*) ;;
  *)
    if ! bash scripts/zookeeper.sh status | grep -q Mode; then
      bash scripts/zookeeper.sh start standalone
      trap 'bash scripts/zookeeper.sh stop' EXIT
      # This ZooKeeper is this checkout's own (.local/zookeeper): no cluster
      # on it but ours ever ran, so a new one is new for sure. Vouched for,
      # it starts at once; a daemon alone would fence a root it makes for a
      # lease (docs/operations.md, "ZooKeeper lost or restored its data").
      build/release/snowflaked cluster create "$@" ||
        echo "run.sh: snowflaked cluster create failed (above); the daemon says what it finds"
    fi
    ;;
esac
build/release/snowflaked "$@" &
daemon=$!
# Ctrl-C reaches the daemon directly (same process group); a TERM sent to
# this script is passed on. Either way, wait for it to finish draining.
trap 'kill -TERM "$daemon" 2>/dev/null || true' TERM
trap ':' INT
status=0
wait "$daemon" || status=$?
while kill -0 "$daemon" 2>/dev/null; do wait "$daemon" || status=$?; done
# 128+N: Ctrl-C interrupted the wait itself, and the daemon ended after; its
# own status is still there to be waited for (127 if it was already taken).
if [ "$status" -gt 128 ]; then
  wait "$daemon" 2>/dev/null && status=0 || { s=$?; [ "$s" -eq 127 ] || status=$s; }
fi
exit "$status"
