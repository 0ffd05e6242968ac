#!/usr/bin/env bash
# Installs, from Debian 12's archive, every package that building, running,
# testing and benchmarking snowflaked needs. Idempotent: packages already
# present are skipped, and apt is not touched at all when nothing is missing.
#   scripts/install-deps.sh          what the build, the daemon and the tests need
#   scripts/install-deps.sh --run    only what building and running the daemon
#                                    need (scripts/run.sh): 15 of the 35 (no
#                                    clang, spin, nginx, wrk, node, prometheus)
#   scripts/install-deps.sh --live   what the live suite needs besides
#                                    (scripts/live-test.sh: a booted Debian with
#                                    systemd, podman and podman-compose)
set -euo pipefail

# Building and running the daemon (scripts/run.sh).
run_packages=(
  # build
  build-essential cmake pkg-config
  # libraries on the design card (+ what the system gives)
  libboost-dev libboost-program-options-dev
  libzookeeper-mt-dev nlohmann-json3-dev libspdlog-dev libsystemd-dev
  # OpenSSL 3: AES and the CSPRNG (opaque IDs, UUIDs), TLS on the listeners and in
  # snowflaked get (the .deb's Depends get libssl3 from dpkg-shlibdeps)
  libssl-dev
  # time zones: cctz, and the tzdata it reads (sequences that restart each day, month or year)
  libcctz-dev tzdata
  # run: a local ZooKeeper for the README's run command and the tests; curl to try it
  zookeeper default-jre-headless curl
)
packages=(
  "${run_packages[@]}"
  # tests and benchmarks (openssl: the TLS tests' certificates and s_client)
  catch2 wrk nginx-light libfaketime faketime openssl
  # the model of the worker-ID protocol (scripts/model-check.sh), the fuzz
  # targets (scripts/fuzz.sh)
  spin clang-14 libfuzzer-14-dev
  # static analysis (scripts/lint.sh)
  clang-tidy-14 cppcheck
  # packaging and deployment tests: the .deb (dpkg-shlibdeps), the unit
  # (systemd-analyze), docker-compose.yml (validated, no engine needed)
  dpkg-dev file systemd docker-compose python3-yaml
  # the OpenAPI contract test (tests/e2e/openapi_contract.py)
  python3-jsonschema
  # promtool, for the metrics and alert-rule tests (tests/e2e/monitoring_test.cpp)
  prometheus
  # Leaf-segment's leaf_alloc table in a real MariaDB (tests/e2e/leaf_segment_import.py)
  mariadb-server
  # a load balancer with health checks in front of replicas (tests/e2e/load_balancer.py)
  haproxy
  # the client libraries' tests and packages, built offline (clients/): Python's
  # wheel, Go's module, Java's jar (JUnit 5 from Debian)
  python3-pytest python3-pip python3-setuptools python3-wheel golang-go
  openjdk-17-jdk-headless junit5
)
if [ "${1:-}" = --run ]; then packages=("${run_packages[@]}"); fi
if [ "${1:-}" = --live ]; then
  packages=(
    # a Debian 12 root with systemd, booted as a system container
    debootstrap systemd-container
    # containers: runc (crun refuses hybrid cgroups), service names between
    # containers (dnsname), the CNI plugins' firewall rules
    podman podman-compose runc golang-github-containernetworking-plugin-dnsname iptables
    # `podman kube play`: a pod's infra container runs the pause image
    # podman builds from catatonit
    catatonit
  )
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node.js and npm, for the test that checks IDs against npm's ID libraries
# (tests/reference): Debian's, unless a node and an npm are already on PATH.
if [ "${1:-}" != --live ] && [ "${1:-}" != --run ] && ! { command -v node && command -v npm; } >/dev/null; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=()
[ "$(id -u)" -ne 0 ] && SUDO=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Only promtool is wanted from the prometheus package: a Prometheus server
# that its installation started under systemd is stopped and disabled.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
  "${SUDO[@]}" systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
echo "install-deps: done"
