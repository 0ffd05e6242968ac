#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, then
#  0. runs the static analysis of src/ and include/ (scripts/lint.sh:
#     clang-tidy with .clang-tidy's checks, and cppcheck); any finding fails;
#  1. builds build/test with AddressSanitizer + UndefinedBehaviorSanitizer and
#     warnings as errors (benchmarks too, so they keep compiling), and runs
#     every test through CTest but the model (5): unit, integration, e2e,
#     package, short fixed-seed chaos runs;
#  2. builds build/tsan with ThreadSanitizer and runs the unit, integration
#     and e2e tests again: the daemon the e2e tests start is TSan-built too,
#     and a race reported anywhere fails its test;
#  3. builds the fuzz targets (clang-14, libFuzzer, ASan + UBSan) and runs
#     each over its seed corpus and 20 s fresh (scripts/fuzz.sh);
#  4. checks the model of the worker-ID protocol with spin
#     (scripts/model-check.sh, CTest label `model` in build/test too);
#  5. runs it where users run it (scripts/live-test.sh): the .deb under a
#     real systemd in a booted Debian 12 container, the image, the compose
#     cluster and deploy/kubernetes (podman kube play) with podman. As root
#     only; otherwise it says it skipped and why.
# 4 and 5 run side by side: the model check is pure computation (a few
# minutes of both cores), the live suite mostly waits (downloads, boots,
# health checks), so the model runs at the lowest priority beside it and
# takes what the live suite leaves. The static analysis (0) does the same
# from the start, with the other suites: about 17 minutes of a core, in
# what the tests leave idle while they wait (ZooKeeper, timeouts, boots)
# rather than before them; its findings fail the run at the end. In the same way the TSan tree is built
# while the ASan tree's tests run, and the fuzz targets while the TSan
# tests run: tests wait on ZooKeeper, timeouts and sockets for a third of
# both cores' time.
#
#   bash scripts/test.sh                 all six
#   bash scripts/test.sh --lint          only 0
#   bash scripts/test.sh --asan [ARGS]   only 1; ARGS go to ctest (e.g. -R layout)
#   bash scripts/test.sh --tsan [ARGS]   only 2
#   bash scripts/test.sh --fuzz [ARGS]   only 3; ARGS go to scripts/fuzz.sh
#   bash scripts/test.sh --model [ARGS]  only 4; ARGS go to scripts/model-check.sh
#   bash scripts/test.sh --live [ARGS]   only 5; ARGS go to scripts/live-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

suites=(lint asan tsan fuzz model live)
case "${1:-}" in
  --lint) suites=(lint); shift ;;
  --asan) suites=(asan); shift ;;
  --tsan) suites=(tsan); shift ;;
  --fuzz) suites=(fuzz); shift ;;
  --model) suites=(model); shift ;;
  --live) suites=(live); shift ;;
esac
has_suite() { [[ " ${suites[*]} " == *" $1 "* ]]; }

# Each suite's wall time, said as it ends (CI keeps a fresh machine's run
# under 50 minutes: where it goes is the first thing to know).
run_started=$SECONDS
suite_started=$SECONDS
bash scripts/install-deps.sh
echo "== test: set-up took $((SECONDS - run_started)) s"
# The live suite's Debian root (debootstrap, once per machine: mostly
# downloads) is made in the background meanwhile, so that it overlaps the
# builds instead of following them; the live suite waits for it (a lock) or
# makes it itself if this did not.
if has_suite live && [ "$(id -u)" -eq 0 ] && bash scripts/install-deps.sh --live >/dev/null 2>&1; then
  mkdir -p build
  /usr/bin/python3 tests/live/livetest.py prefetch >build/live-prefetch.log 2>&1 &
fi
# ARGS belong to a suite asked for alone.
alone_args() { if [ ${#suites[@]} -eq 1 ]; then printf '%s\0' "$@"; fi; }
# Work started in the background, at the lowest priority: it gets only what
# the tests leave idle. In a session of its own, so that it can be stopped
# as a group; and since the kernel's autogroup weighs a session as much as
# everything else together whatever its nice value, that session's
# autogroup is made nice 19 too. $! is the group's id.
lowest_priority() { echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"; }
export -f lowest_priority
in_background() {  # log command...
  local log=$1; shift
  mkdir -p build
  setsid bash -c 'lowest_priority "$@"' background "$@" >"$log" 2>&1 &
}
# A build a later suite needs, started before it; that suite waits for it
# (await_build), and a failed build fails the run there as it would have in
# the foreground.
declare -A build_pid=()
start_build() {  # suite command...
  local suite=$1; shift
  in_background "build/background-build-$suite.log" "$@"
  build_pid[$suite]=$!
}
await_build() {  # suite
  local pid=${build_pid[$1]:-} status=0
  [ -n "$pid" ] || return 0
  wait "$pid" || status=$?
  unset "build_pid[$1]"
  echo "== the $1 build (it ran in the background):"
  tail -n 3 "build/background-build-$1.log"
  [ "$status" -eq 0 ] || { cat "build/background-build-$1.log"; echo "test: the $1 build failed"; exit 1; }
}
model_pid=
lint_pid=
stop_background() {
  for pid in $model_pid $lint_pid "${build_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
took() { echo "== test: $1 took $((SECONDS - suite_started)) s ($((SECONDS - run_started)) s in all)"; suite_started=$SECONDS; }
for suite in "${suites[@]}"; do
  suite_started=$SECONDS
  if [ "$suite" = model ]; then
    mapfile -d '' -t args < <(alone_args "$@")
    if has_suite live && [ "$(id -u)" -eq 0 ]; then
      # Beside the live suite (below).
      in_background build/model-check.log bash scripts/model-check.sh "${args[@]}"
      model_pid=$!
    else
      bash scripts/model-check.sh "${args[@]}"
      took model
    fi
    continue
  fi
  if [ "$suite" = lint ]; then
    if [ ${#suites[@]} -gt 1 ]; then
      # Beside the other suites (above), awaited at the end.
      in_background build/lint.log bash scripts/lint.sh
      lint_pid=$!
    else
      bash scripts/lint.sh
      took lint
    fi
    continue
  fi
  if [ "$suite" = live ]; then
    if [ ${#suites[@]} -eq 1 ]; then bash scripts/live-test.sh "$@"; else bash scripts/live-test.sh; fi
    took live
    continue
  fi
  if [ "$suite" = fuzz ]; then
    # ARGS are ctest's unless --fuzz asked for this suite alone.
    await_build fuzz
    if [ ${#suites[@]} -eq 1 ]; then bash scripts/fuzz.sh "$@"; else bash scripts/fuzz.sh; fi
    took fuzz
    continue
  fi
  await_build "$suite"
  bash scripts/build-test-tree.sh "$suite"
  if [ "$suite" = asan ]; then
    if has_suite tsan; then start_build tsan bash scripts/build-test-tree.sh tsan; fi
    (cd build/test && ctest --output-on-failure -j"$(nproc)" -LE model "$@")
  else
    if has_suite fuzz; then start_build fuzz bash scripts/fuzz.sh --build-only; fi
    # halt_on_error: a race ends the process that has it (the daemon too),
    # so its test fails. tests/tsan.supp says why each entry is there.
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan.supp"
    (cd build/tsan && ctest --output-on-failure -j"$(nproc)" -L 'unit|integration|e2e' "$@")
  fi
  took "$suite (its build and tests)"
done
if [ -n "$model_pid" ]; then
  echo "== the model check (it ran beside the live suite):"
  model_status=0
  wait "$model_pid" || model_status=$?
  model_pid=
  cat build/model-check.log
  [ "$model_status" -eq 0 ] || { echo "test: the model check failed"; exit 1; }
  took "the wait for the model check"
fi
if [ -n "$lint_pid" ]; then
  suite_started=$SECONDS
  echo "== the static analysis (it ran beside the other suites):"
  lint_status=0
  wait "$lint_pid" || lint_status=$?
  lint_pid=
  cat build/lint.log
  [ "$lint_status" -eq 0 ] || { echo "test: the static analysis failed"; exit 1; }
  took "the wait for the static analysis"
fi
echo "== test: every suite passed in $((SECONDS - run_started)) s"
