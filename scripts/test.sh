#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, then
#  0. runs the static analysis of src/ and include/ (scripts/lint.sh:
#     clang-tidy with .clang-tidy's checks, and cppcheck); any finding fails;
#  1. builds build/test with AddressSanitizer + UndefinedBehaviorSanitizer and
#     warnings as errors (benchmarks too, so they keep compiling), and runs
#     every test through CTest: unit, integration, e2e, package, short
#     fixed-seed chaos runs, and the model check of the protocol (spin);
#  2. builds build/tsan with ThreadSanitizer and runs the unit, integration
#     and e2e tests again: the daemon the e2e tests start is TSan-built too,
#     and a race reported anywhere fails its test;
#  3. builds the fuzz targets (clang-14, libFuzzer, ASan + UBSan) and runs
#     each over its seed corpus and 20 s fresh (scripts/fuzz.sh);
#  4. runs it where users run it (scripts/live-test.sh): the .deb under a
#     real systemd in a booted Debian 12 container, the image and the compose
#     cluster with podman. As root only; otherwise it says it skipped and why.
#
#   bash scripts/test.sh                 all five
#   bash scripts/test.sh --lint          only 0
#   bash scripts/test.sh --asan [ARGS]   only 1; ARGS go to ctest (e.g. -R layout)
#   bash scripts/test.sh --tsan [ARGS]   only 2
#   bash scripts/test.sh --fuzz [ARGS]   only 3; ARGS go to scripts/fuzz.sh
#   bash scripts/test.sh --live [ARGS]   only 4; ARGS go to scripts/live-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

suites=(lint asan tsan fuzz live)
case "${1:-}" in
  --lint) suites=(lint); shift ;;
  --asan) suites=(asan); shift ;;
  --tsan) suites=(tsan); shift ;;
  --fuzz) suites=(fuzz); shift ;;
  --live) suites=(live); shift ;;
esac

bash scripts/install-deps.sh
for suite in "${suites[@]}"; do
  if [ "$suite" = lint ]; then
    bash scripts/lint.sh
    continue
  fi
  if [ "$suite" = live ]; then
    if [ ${#suites[@]} -eq 1 ]; then bash scripts/live-test.sh "$@"; else bash scripts/live-test.sh; fi
    continue
  fi
  if [ "$suite" = fuzz ]; then
    # ARGS are ctest's unless --fuzz asked for this suite alone.
    if [ ${#suites[@]} -eq 1 ]; then bash scripts/fuzz.sh "$@"; else bash scripts/fuzz.sh; fi
    continue
  fi
  bash scripts/build-test-tree.sh "$suite"
  if [ "$suite" = asan ]; then
    (cd build/test && ctest --output-on-failure -j"$(nproc)" "$@")
  else
    # halt_on_error: a race ends the process that has it (the daemon too),
    # so its test fails. tests/tsan.supp says why each entry is there.
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan.supp"
    (cd build/tsan && ctest --output-on-failure -j"$(nproc)" -L 'unit|integration|e2e' "$@")
  fi
done
