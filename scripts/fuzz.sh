#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang-14, ASan + UBSan) in
# build/fuzz and runs each over its seed corpus (tests/fuzz/corpus/<target>),
# then fresh for a bounded time. New inputs go to build/fuzz/corpus/<target>,
# never into the repo; a crash is saved as build/fuzz/crash-<target>-* and
# fails the run (make it a seed and a unit test once fixed).
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]     default: 20 s each, every target
#   scripts/fuzz.sh --build-only [TARGET...]      build them, run nothing
#
# Prints executions, coverage (edges) and features of each target. Targets
# run side by side, one per core.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=20
build_only=false
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-only) build_only=true; shift ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(ls tests/fuzz/corpus)

# NDEBUG, as the daemon ships: the targets check with FUZZ_CHECK, not
# assert(). Boost 1.74's Beast has a wrong assertion in its chunked-body
# parser (boostorg/beast#2861, fixed in 1.86) that a request fed a byte at
# a time trips; with NDEBUG the parser returns need_more, as it should.
export CC=clang-14 CXX=clang++-14
cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSNOWFLAKE_FUZZ=ON -DSNOWFLAKE_WERROR=ON \
  -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
# The targets only (not the daemon or the client: nothing here runs them);
# all of them as the one target that builds them side by side.
if [ "${targets[*]}" = "$(ls tests/fuzz/corpus | xargs)" ]; then
  cmake --build build/fuzz -j"$(nproc)" --target fuzz_targets
else
  cmake --build build/fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
fi
if $build_only; then exit 0; fi

# One target: its seeds, then fresh inputs for $seconds; a line of figures
# into build/fuzz/<target>.result. Each is one process: as many run at once
# as there are cores.
fuzz_one() {
  local t=$1
  local bin="$root/build/fuzz/tests/fuzz/fuzz_$t"
  local work="$root/build/fuzz/corpus/$t"
  local log="$root/build/fuzz/$t.log"
  mkdir -p "$work"
  # libFuzzer runs every seed first, then fuzzes; what it finds goes into
  # the work corpus (the first directory).
  local result=ok
  if ! "$bin" -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$root/build/fuzz/crash-$t-" "$work" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    result="FAILED: a finding (see $log, build/fuzz/crash-$t-*)"
  fi
  # A finding among the seeds leaves no coverage lines: "?" then.
  local runs edges features
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  edges=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  features=$( (grep -o 'ft: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  printf '%-16s %10s %8s %8s %8s  %s\n' "$t" "${runs:-?}" "${edges:-?}" "${features:-?}" \
    "$(find "$work" -type f | wc -l)" "$result" >"$root/build/fuzz/$t.result"
}

jobs_at_once=$(nproc)
for t in "${targets[@]}"; do
  rm -f "build/fuzz/$t.result"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

failed=0
printf '%-16s %10s %8s %8s %8s  %s\n' target runs edges features corpus result
for t in "${targets[@]}"; do
  if [ -f "build/fuzz/$t.result" ]; then
    cat "build/fuzz/$t.result"
    grep -q '  ok$' "build/fuzz/$t.result" || failed=1
  else
    echo "$t: no result (see build/fuzz/$t.log)"
    failed=1
  fi
done
# A finding's own lines, for a CI log read where build/ is out of reach:
# the report (sanitizer or broken invariant) and the input that made it.
for t in "${targets[@]}"; do
  [ -f "build/fuzz/$t.result" ] && grep -q '  ok$' "build/fuzz/$t.result" && continue
  echo "== $t: the finding (build/fuzz/$t.log)"
  grep -m1 -A24 -E 'invariant broken|==[0-9]+==ERROR|^ERROR: libFuzzer|^SUMMARY' "build/fuzz/$t.log" |
    cut -c1-300 || tail -n 20 "build/fuzz/$t.log"
  for crash in build/fuzz/crash-"$t"-*; do
    [ -f "$crash" ] || continue
    echo "== $crash, $(wc -c <"$crash") bytes (base64 of the first 1,500):"
    # Cut by head's own input, not a pipe: pipefail would turn head's early
    # exit into this script's status (141) instead of the finding's 1.
    head -c 1500 "$crash" | base64 -w 100; echo
  done
done
exit "$failed"
