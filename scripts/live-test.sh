#!/usr/bin/env bash
# The live suite: snowflaked where users run it, for real.
#  - systemd: the .deb (scripts/package-deb.sh) installed with apt in a Debian
#    12 system container booted with systemd as PID 1 (systemd-nspawn), the
#    unit checked live (tests/live/systemd_test.py);
#  - containers: packaging/Dockerfile built, docker-compose.yml brought up
#    with podman and podman-compose, and deploy/kubernetes played with
#    `podman kube play` (tests/live/containers_test.py).
# Both need root (namespaces, podman as root) and Debian's packages for them;
# without either the suite says it skipped and why, and exits 0. Both leave
# the machine as they found it; the Debian root they boot is cached in
# /var/cache/snowflaked-tests (made once, about a minute and a half).
# The containers run first: the .deb their image's build stage makes from the
# tree is the one the systemd run installs (scripts/package-deb.sh makes it
# when the systemd run is asked for alone, or the containers run made none).
# Once that .deb is out (the images built, about five minutes in), the
# systemd run starts beside the rest of the containers run: both mostly
# wait (boots, health checks, apt), and they share nothing but the cached
# Debian root (podman's store and networks are the containers run's own,
# the system container uses the host's network and ports picked free).
# The containers run's lines follow the systemd run's, from its log.
#
#   bash scripts/live-test.sh                 both
#   bash scripts/live-test.sh systemd         one of them
#   bash scripts/live-test.sh containers
set -euo pipefail
cd "$(dirname "$0")/.."

tests=(containers systemd)
[ $# -gt 0 ] && tests=("$@")
for t in "${tests[@]}"; do
  case "$t" in systemd | containers) ;; *) echo "live-test: systemd or containers, not $t" >&2; exit 2 ;; esac
done

skip() {
  echo "live-test: SKIPPED (${tests[*]}): $*"
  exit 0
}
[ "$(id -u)" -eq 0 ] || skip "it needs root (systemd-nspawn, podman as root); run scripts/test.sh as root"
[ "$(uname -s)" = Linux ] || skip "it needs Linux"
bash scripts/install-deps.sh
if ! out=$(bash scripts/install-deps.sh --live 2>&1); then
  skip "its tools could not be installed: $out"
fi
echo "$out"

failed=()
debs=build/live/deb
rm -rf "$debs"
mkdir -p build/live

run_one() {  # test: its suite's lines, then "passed"/"FAILED"; its status
  local t=$1 started=$SECONDS args
  echo "== live: $t"
  if [ "$t" = systemd ]; then
    local deb
    deb=$(ls "$debs"/snowflaked_*.deb 2>/dev/null | head -1 || true)
    if [ -n "$deb" ]; then
      echo "      the .deb of the image's build stage: $deb"
    else
      deb=$(bash scripts/package-deb.sh | tail -1)
    fi
    args=("$deb" docs/operations.md)
  else
    args=(. "$debs")
  fi
  if /usr/bin/python3 "tests/live/${t}_test.py" "${args[@]}"; then
    echo "== live: $t passed in $((SECONDS - started)) s"
  else
    echo "== live: $t FAILED after $((SECONDS - started)) s"
    return 1
  fi
}

if [ "${tests[*]}" = "containers systemd" ]; then
  containers_log=build/live/containers.log
  echo "== live: containers (its lines follow the systemd run's: $containers_log)"
  run_one containers >"$containers_log" 2>&1 &
  containers=$!
  trap 'kill $(pgrep -P "$containers") "$containers" 2>/dev/null || true' EXIT
  # The .deb appears whole (containers_test.py renames it into place).
  while kill -0 "$containers" 2>/dev/null && ! ls "$debs"/snowflaked_*.deb >/dev/null 2>&1; do sleep 1; done
  run_one systemd || failed+=(systemd)
  wait "$containers" || failed+=(containers)
  trap - EXIT
  cat "$containers_log"
else
  for t in "${tests[@]}"; do run_one "$t" || failed+=("$t"); done
fi
[ ${#failed[@]} -eq 0 ] || { echo "live-test: failed: ${failed[*]}"; exit 1; }
