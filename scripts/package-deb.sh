#!/usr/bin/env bash
# Builds a Release tree (no tests) and the Debian package from it:
# build/package/snowflaked_<version>_<arch>.deb. Install it with
# `sudo apt install ./build/package/snowflaked_*.deb`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
cpack --config build/release/CPackConfig.cmake -B build/package >/dev/null
ls build/package/snowflaked_*.deb
