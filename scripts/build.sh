#!/usr/bin/env bash
# Configures and builds one tree. Usage: scripts/build.sh DIR [cmake -D options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
cmake -S . -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
