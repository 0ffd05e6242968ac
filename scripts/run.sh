#!/usr/bin/env bash
# Installs what is missing, builds a Release tree and runs snowflaked in the
# foreground (Ctrl-C stops it). Extra arguments go to snowflaked; the default
# config is conf/local.json (static worker 0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  >/dev/null
if [ $# -eq 0 ]; then set -- --config conf/local.json; fi
exec build/release/snowflaked "$@"
