#!/usr/bin/env bash
# docker-compose.yml as Debian's docker-compose reads it (no engine needed):
# it validates, and the resolved file holds what the cluster needs.
# Usage: compose_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$src"

out=$(docker-compose -f docker-compose.yml config -q 2>&1) || fail "docker-compose config: $out"
[ -z "$out" ] || fail "docker-compose config warns: $out"

docker-compose -f docker-compose.yml config | python3 -c '
import sys, yaml
c = yaml.safe_load(sys.stdin)
s = c["services"]
def check(ok, what):
    if not ok:
        sys.exit("FAIL: " + what)
zks = ["zk1", "zk2", "zk3"]
replicas = ["snowflaked1", "snowflaked2", "snowflaked3"]
check(sorted(s) == sorted(zks + replicas + ["cluster-create"]), "services are " + ", ".join(sorted(s)))
# The first start vouches for the new cluster, once, with the config of the replicas.
once = s["cluster-create"]
check(once["command"][:2] == ["cluster", "create"], "cluster-create does not run snowflaked cluster create")
check(once["restart"] == "no", "cluster-create is restarted")
check(once["environment"] == s["snowflaked1"]["environment"], "cluster-create has another config than the replicas have")
check(set(once["depends_on"]) == set(zks), "cluster-create does not wait for the ensemble")
ids = set()
for z in zks:
    check(s[z]["image"] == "zookeeper:3.8", z + " is not the official zookeeper:3.8 image")
    env = s[z]["environment"]
    ids.add(str(env["ZOO_MY_ID"]))
    servers = env["ZOO_SERVERS"].split()
    check(len(servers) == 3 and all(("zk%d:" % i) in servers[i - 1] for i in (1, 2, 3)),
          z + ": ZOO_SERVERS does not list the three nodes")
check(ids == {"1", "2", "3"}, "ZOO_MY_ID values are " + str(ids))
state_volumes = set()
ports = set()
for r in replicas:
    svc = s[r]
    check(svc["build"]["dockerfile"] == "packaging/Dockerfile", r + " is not built by packaging/Dockerfile")
    check(svc["healthcheck"]["test"][1:3] == ["snowflaked", "probe"], r + " is not health-checked by snowflaked probe (/ready, TLS or not)")
    check(set(svc["depends_on"]) == set(zks), r + " does not wait for the ensemble")
    check(all(d["condition"] == "service_healthy" for d in svc["depends_on"].values()),
          r + " does not wait for healthy ZooKeeper nodes")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
    state = mounts.get("/var/lib/snowflaked", "")
    check(state in c["volumes"], r + ": the state dir is not a named volume")
    state_volumes.add(state)
    env = svc["environment"]
    check(env.get("SNOWFLAKED_ZOOKEEPER_HOSTS") == "zk1:2181,zk2:2181,zk3:2181",
          r + ": SNOWFLAKED_ZOOKEEPER_HOSTS is not the ensemble")
    check(env.get("SNOWFLAKED_SERVICE") == "compose", r + ": SNOWFLAKED_SERVICE is not compose")
    check(svc["restart"] == "on-failure:3", r + ": exits 2 and 3 would be restarted forever")
    ports.update(p.split(":")[1] for p in svc["ports"])
check(len(state_volumes) == 3, "replicas share a state volume")
check(len(ports) == 3, "replicas share a host port")
'

# The multi-stage Dockerfile: both stages Debian 12, the runtime from the build's .deb.
froms=$(grep -E '^FROM ' packaging/Dockerfile | awk '{print $2}' | tr '\n' ' ')
[ "$froms" = "debian:bookworm debian:bookworm-slim " ] || fail "Dockerfile stages: $froms"
grep -q 'COPY --from=build /src/build/snowflaked_\*.deb' packaging/Dockerfile \
  || fail "the runtime stage does not take the build stage's .deb"
grep -q '^COPY conf/container.json /etc/snowflaked/snowflaked.json$' packaging/Dockerfile \
  || fail "the image does not install conf/container.json as its config"

# The image's config: valid, recycle mode, state in the volume, the container's
# port on every address, timings for short-lived containers.
"$build/snowflaked" check-config conf/container.json >/dev/null || fail "conf/container.json does not validate"
python3 -c '
import json, sys
c = json.load(open("conf/container.json"))
co = c["coordinator"]
assert co["type"] == "recycle", "not recycle mode"
assert co["state_dir"] == "/var/lib/snowflaked", "state_dir is not the volume"
assert c["http"]["listen"] == "0.0.0.0:8080", "does not listen on the container port"
assert (co["heartbeat_interval_ms"], co["lease_timeout_ms"], co["reclaim_after_ms"]) == \
    (10000, 60000, 120000), "not the timings docs/operations.md gives for containers"
' || fail "conf/container.json"
echo "compose: OK"
