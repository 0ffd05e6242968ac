#!/usr/bin/env bash
# Static analysis of src/ and include/: the layout of every C++ file of the
# tree against .clang-format (clang-format-14; `scripts/lint.sh --fix-format`
# rewrites them), the layers' rule (scripts/check-layers.py: every include
# points down), then clang-tidy with the checks of .clang-tidy (every
# finding is an error), then cppcheck, which looks for what clang-tidy does
# not (lifetimes of pointers into smart pointers and containers, among
# others). Both read the compile commands of build/lint, which is configured
# (headers generated) but not built.
#
#   scripts/lint.sh                all four, over every source file
#   scripts/lint.sh FILE...        clang-tidy over these files only
#   scripts/lint.sh --fix-format   formats every C++ file of the tree in place
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Every C++ file git knows of (tracked, or new and not ignored).
cxx_files() {
  git ls-files -z --cached --others --exclude-standard -- 'src/*' 'include/*' 'tests/*' \
    | grep -zE '\.(cpp|hpp)$'
}
if [ "${1:-}" = --fix-format ]; then
  cxx_files | xargs -0 clang-format-14 -i
  exit 0
fi
if [ $# -eq 0 ]; then
  echo "lint: clang-format ($(clang-format-14 --version | sed -n 's/.*version //p'))"
  if ! findings=$(cxx_files | xargs -0 clang-format-14 --dry-run --Werror 2>&1); then
    # One line per file and line that differs.
    grep -oE '^[^ ]+:[0-9]+:[0-9]+: error' <<<"$findings" | sed 's/: error$//' | sort -u
    echo "lint: these lines differ from .clang-format's layout (scripts/lint.sh --fix-format)" >&2
    exit 1
  fi
  python3 scripts/check-layers.py
  # One clock measures every duration: BootClock (CLOCK_BOOTTIME, clock.hpp).
  # CLOCK_MONOTONIC stops while the host is suspended; an instant of it
  # compared with a BootClock one is off by the time spent suspended.
  if git grep -nE "steady_clock|CLOCK_MONOTONIC" -- src include ':!include/snowflake/base/clock.hpp'; then
    echo "lint: steady_clock or CLOCK_MONOTONIC in src/ or include/: measure durations on BootClock (include/snowflake/base/clock.hpp)" >&2
    exit 1
  fi
  # Zeroing a buffer right before it is freed is a dead store the optimiser
  # may drop: a secret (a key, a token, the line read from its file) is
  # wiped with wipe() (include/snowflake/base/secret_wipe.hpp, OPENSSL_cleanse).
  if git grep -nE "std::fill\(.*'\\\\0'\)|\.fill\(0\)" -- src include; then
    echo "lint: zeroing with std::fill or .fill(0) in src/: wipe secrets with wipe() (include/snowflake/base/secret_wipe.hpp)" >&2
    exit 1
  fi
fi

CXX=clang++-14 cmake -S . -B build/lint -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DSNOWFLAKE_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug -DSNOWFLAKE_UNITY_BUILD=OFF >/dev/null
# The one source made at build time (the revision): cppcheck reads every file
# the compile commands name.
cmake --build build/lint --target snowflake_revision >/dev/null
if [ $# -gt 0 ]; then
  files=("$@")
else
  files=("$root/src/")  # a pattern: every file of the compile commands under src/
fi

echo "lint: clang-tidy ($(clang-tidy-14 --version | sed -n 's/.*LLVM version //p'))"
log=build/lint/clang-tidy.log
if ! run-clang-tidy-14 -p build/lint -quiet -j"$(nproc)" "${files[@]}" >"$log" 2>&1; then
  # Each finding once (a header's finding repeats for every file that includes it).
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '(warning|error): ' | sort -u
  echo "lint: clang-tidy has findings (all of its output: $log)" >&2
  exit 1
fi
[ $# -gt 0 ] && exit 0

echo "lint: cppcheck ($(cppcheck --version))"
cppcheck --project=build/lint/compile_commands.json --enable=warning,performance,portability \
  --inline-suppr --quiet -j"$(nproc)" --error-exitcode=1 --suppress='*:/usr/*'
echo "lint: clean"
