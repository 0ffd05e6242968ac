#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, builds everything with AddressSanitizer + UndefinedBehaviorSanitizer
# and warnings as errors (benchmarks too, so they keep compiling), and runs
# every test through CTest: unit, integration, e2e, package, and short
# fixed-seed chaos runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build-test-tree.sh
cd build/test
ctest --output-on-failure -j"$(nproc)" "$@"
