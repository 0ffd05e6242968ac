#!/usr/bin/python3
"""packaging/Dockerfile and docker-compose.yml for real, with podman and
podman-compose: the image built from the tree (both stages), its
HEALTHCHECK, and the compose cluster (3 ZooKeeper nodes, 3 replicas) brought
up, used, hurt and taken down as docs/operations.md says.

Everything podman makes lives in a store of this run's own (images,
containers, volumes, network configs), removed at the end; the machine's
own podman store and /etc are left alone. The official zookeeper:3.8 image
cannot be pulled here: ZOOKEEPER_IMAGE points the compose file at a
stand-in built from Debian's zookeeper package (tests/live/zookeeper-image).

Usage: containers_test.py SOURCE_DIR [DEB_DIR]   (as root)
With DEB_DIR, the .deb that the image's build stage made from the tree is
copied there (live-test.sh gives it to the systemd suite: the same package
as scripts/package-deb.sh makes, without compiling it a second time).
"""

import base64
import hashlib
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from livetest import (Failure, check, debian_root_tarball, dying_with_us, free_port, http_get, http_json,  # noqa: E402
                      log, main_guard, poll, run, scratch_dir, stale_scratch_dirs, step)
import kube_manifest  # noqa: E402
import test_certificates  # noqa: E402
import strict_service  # noqa: E402

KIND = "containers"
ZOOKEEPERS = ["zk1", "zk2", "zk3"]
REPLICAS = ["snowflaked1", "snowflaked2", "snowflaked3"]
ONCE = "cluster-create"  # the one-shot that vouches for the new cluster
IMAGE = "localhost/snowflaked:local"
BUILD_STAGE = "localhost/snowflaked-build:local"
CONFIG = "/etc/snowflaked/snowflaked.json"
KUBE_SERVICE = "kube"  # the played pods' pool, apart from the compose cluster's
DEFAULT_EPOCH_MS = 1735689600000  # the default layout's epoch: an ID's time is above its 22 bits


def podman_env(work):
    """CONTAINERS_CONF and CONTAINERS_STORAGE_CONF of this run's own: runc
    (crun refuses this host's hybrid cgroups), cgroupfs and file events (no
    systemd on the host), ulimits below the host's hard limits, and every
    path under `work`."""
    conf = os.path.join(work, "containers.conf")
    storage = os.path.join(work, "storage.conf")
    with open(conf, "w") as f:
        # Soft and hard alike: podman 4.3 swaps the two for a pod's infra
        # container (kube play), and runc refuses a soft limit above the hard.
        f.write(f'[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n'
                f'[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                f'tmp_dir = "{work}/libpod-tmp"\n'
                f'[network]\nnetwork_config_dir = "{work}/networks"\n')
    with open(storage, "w") as f:
        f.write(f'[storage]\ndriver = "overlay"\ngraphroot = "{work}/storage"\n'
                f'runroot = "{work}/run"\n')
    env = dict(os.environ, CONTAINERS_CONF=conf, CONTAINERS_STORAGE_CONF=storage)
    # podman-compose and podman must not pick up a project from elsewhere.
    for var in ("COMPOSE_PROJECT_NAME", "COMPOSE_FILE"):
        env.pop(var, None)
    return env


def release_store(work):
    """Stops and removes everything in the store under `work`, then the store."""
    if os.path.exists(os.path.join(work, "storage.conf")):
        env = podman_env(work)
        run(["podman", "rm", "--all", "--force", "--time", "0"], check=False, env=env, timeout=120)
        run(["podman", "system", "reset", "--force"], check=False, env=env, timeout=300)
        run(["umount", "-R", "-l", os.path.join(work, "storage")], check=False)
    shutil.rmtree(work, ignore_errors=True)


class Firewall:
    """The CNI plugins add iptables chains and rules that outlive the
    network they were made for; this removes what appeared during the run."""

    TABLES = ("filter", "nat")

    def __init__(self):
        self.before = {t: self._rules(t) for t in self.TABLES}

    @staticmethod
    def _rules(table):
        out = run(["iptables-save", "-t", table], check=False).stdout
        return [line for line in out.splitlines() if line.startswith(("-A ", ":"))]

    def restore(self):
        for table in self.TABLES:
            new = [r for r in self._rules(table) if r not in self.before[table]]
            for rule in reversed([r for r in new if r.startswith("-A ")]):
                run(["iptables", "-t", table, "-D"] + shlex.split(rule[3:]), check=False)
            for chain in [r[1:].split()[0] for r in new if r.startswith(":")]:
                run(["iptables", "-t", table, "-F", chain], check=False)
                run(["iptables", "-t", table, "-X", chain], check=False)


class Cluster:
    """docker-compose.yml under podman-compose, as project `name`."""

    def __init__(self, source, env, name):
        self.source = source
        self.name = name
        self.ports = {r: free_port() for r in REPLICAS}
        self.env = dict(env, ZOOKEEPER_IMAGE="localhost/snowflaked-live/zookeeper:3.8",
                        **{f"{r.upper()}_PORT": str(p) for r, p in self.ports.items()})

    def compose(self, *args, timeout=900):
        # docs/operations.md's command for podman; --network=host only because this
        # machine's builds reach Debian's archive that way.
        return run(["podman-compose", "--podman-build-args", "--format docker --network=host",
                    "-p", self.name, "-f", "docker-compose.yml"] + list(args),
                   env=self.env, cwd=self.source, timeout=timeout)

    def podman(self, *args, check=True, timeout=120):
        return run(["podman"] + list(args), env=self.env, check=check, timeout=timeout)

    def container(self, service):
        return f"{self.name}_{service}_1"

    def url(self, replica, path):
        return f"http://127.0.0.1:{self.ports[replica]}{path}"

    def exec(self, service, *args, check=True):
        return self.podman("exec", self.container(service), *args, check=check)

    def pool(self, via, service=None, hosts=None):
        """`pool status` in a replica: of its pool, or of another service's
        (on another ensemble)."""
        env = ["--env", f"SNOWFLAKED_SERVICE={service}"] if service else []
        env += ["--env", f"SNOWFLAKED_ZOOKEEPER_HOSTS={hosts}"] if hosts else []
        return json.loads(self.podman("exec", *env, self.container(via), "snowflaked", "pool",
                                      "status", "--config", CONFIG, "--json").stdout)

    def zookeeper_word(self, zk, word):
        """A four-letter word asked inside the ZooKeeper container (bash's
        /dev/tcp: the image needs no client of its own)."""
        return self.exec(zk, "bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/2181; printf {word} >&3; "
                                           "cat <&3", check=False).stdout

    def health(self, container):
        """Runs the container's health check once, as podman's timer would
        (the host has no systemd to schedule it); returns the state."""
        self.podman("healthcheck", "run", container, check=False)
        return self.podman("inspect", "--format", "{{.State.Health.Status}}", container).stdout.strip()

    def listing(self):
        label = f"label=io.podman.compose.project={self.name}"
        return {
            "containers": self.podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").stdout.split(),
            "volumes": [v for v in self.podman("volume", "ls", "--format", "{{.Name}}").stdout.split()],
            "networks": [n for n in self.podman("network", "ls", "--format", "{{.Name}}").stdout.split()
                         if n.startswith(self.name)],
        }


def replica_ready(cluster, replica):
    """/ready's body; else what it answered instead, for the failure."""
    status, body = http_json(cluster.url(replica, "/ready"))
    return body if status == 200 else Failure(f"/ready: {status} {body}")


def issues_ids(cluster, replica, worker):
    """An ID from the replica, decoding to its own worker ID."""
    status, text = http_get(cluster.url(replica, "/id/order?format=text"))
    if status != 200:
        return None
    status, decoded = http_json(cluster.url(replica, f"/decode/{text.strip()}"))
    return status == 200 and decoded["worker_id"] == worker


def clients_of(cluster, zk):
    """The client addresses connected to one ZooKeeper node (its `stat`)."""
    return re.findall(r"^ /([\d.]+):\d+\[\d+\]", cluster.zookeeper_word(zk, "stat"), re.M)


def export_deb(cluster, into):
    """The .deb of the image's build stage (podman's layer cache: `podman-
    compose build` just built it from the tree), copied into `into`: whole
    or not at all, since live-test.sh starts the systemd run once it is
    there."""
    started = time.monotonic()
    cluster.podman("build", "--format", "docker", "--network=host", "--target", "build", "-t", BUILD_STAGE,
                   "-f", "packaging/Dockerfile", cluster.source, timeout=900)
    os.makedirs(into, exist_ok=True)
    for old in [f for f in os.listdir(into) if f.endswith(".deb")]:
        os.remove(os.path.join(into, old))
    partial = os.path.join(into, "partial")
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    cluster.podman("run", "--rm", "--network", "none", "-v", f"{os.path.abspath(partial)}:/out", BUILD_STAGE,
                   "sh", "-c", "cp /src/build/snowflaked_*.deb /out/")
    debs = [f for f in os.listdir(partial) if f.endswith(".deb")]
    check(len(debs) == 1, f"the build stage made {debs}")
    os.rename(os.path.join(partial, debs[0]), os.path.join(into, debs[0]))
    os.rmdir(partial)
    log(f"      {os.path.join(into, debs[0])} (the build stage, from the cache: "
        f"{time.monotonic() - started:.0f} s)")


def build_images(cluster, work):
    """Both images at once: the ZooKeeper stand-in is mostly apt (downloads,
    dpkg), which overlaps the snowflaked image's compile. The gain is small
    (419 s for both against 146 s + 338 s in turn when nothing else ran):
    that compile keeps both cores busy."""
    zookeeper_log = os.path.join(work, "zookeeper-image.log")
    with open(zookeeper_log, "w") as out:
        zookeeper = subprocess.Popen(
            dying_with_us(["podman", "build", "--format", "docker", "--network=host", "-t",
                           cluster.env["ZOOKEEPER_IMAGE"],
                           os.path.join(cluster.source, "tests/live/zookeeper-image")]),
            stdout=out, stderr=subprocess.STDOUT, env=cluster.env)
    try:
        started = time.monotonic()
        cluster.compose("build")
        log(f"      podman-compose build took {time.monotonic() - started:.0f} s")
        status = zookeeper.wait(timeout=900)
    finally:
        if zookeeper.poll() is None:
            zookeeper.kill()
            zookeeper.wait()
    with open(zookeeper_log) as f:
        check(status == 0, f"the ZooKeeper stand-in image: podman build exit {status}\n{f.read()[-4000:]}")
    log(f"      both images: {time.monotonic() - started:.0f} s")


class Live:
    """What the steps share: the source tree, the scratch directory, podman's
    environment, the compose cluster, and the worker ID each replica took."""

    def __init__(self, source, deb_dir, work):
        self.source, self.deb_dir, self.work = source, deb_dir, work
        self.env = podman_env(work)
        self.cluster = Cluster(source, self.env, f"snowflakedlive{os.getpid()}")
        self.workers = {}


def base_image(live):
    env = live.env
    tarball = debian_root_tarball()
    run(["podman", "import", tarball, "docker.io/library/debian:bookworm"], env=env)
    run(["podman", "tag", "docker.io/library/debian:bookworm",
         "docker.io/library/debian:bookworm-slim"], env=env)


def images(live):
    cluster, work = live.cluster, live.work
    build_images(cluster, work)
    if live.deb_dir:
        export_deb(cluster, live.deb_dir)


def exit_code(cluster, container, timeout):
    """The exit code (text) of a one-shot container, once it has ended."""
    seen = []  # the states it went through, for the failure's message

    def ended():
        st = cluster.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                            container).stdout.split()
        if not seen or seen[-1] != st:
            seen.append(st)
        # podman 4.3 says "stopped" for a container with a health check
        # that exited on its own, "exited" otherwise.
        return st[1] if st and st[0] in ("exited", "stopped") else None

    try:
        return poll(f"{container} ended", ended, timeout)
    except Failure as e:
        raise Failure(f"{e}; its states: {seen}") from e


def compose_up(live):
    cluster = live.cluster
    started = time.monotonic()
    cluster.compose("up", "-d", "--build")
    log(f"      up --build took {time.monotonic() - started:.0f} s")
    inspect = json.loads(cluster.podman("image", "inspect", IMAGE).stdout)[0]
    config = inspect["Config"]
    check(config.get("User") == "10001:0", f"the image's user is {config.get('User')!r}, not numeric")
    healthcheck = inspect.get("Healthcheck") or config.get("Healthcheck") or {}
    check("probe" in healthcheck.get("Test", []),
          f"the image has no `snowflaked probe` HEALTHCHECK (built in OCI format?): {healthcheck}")
    # The runtime stage installed the .deb the build stage made.
    version = cluster.podman("run", "--rm", "--network", "none", "--entrypoint", "dpkg-query",
                             IMAGE, "-W", "-f", "${Status} ${Version}", "snowflaked").stdout
    check(version.startswith("install ok installed"), f"snowflaked package in the image: {version}")
    running = cluster.listing()["containers"]
    check(sorted(running) == sorted(cluster.container(s) for s in ZOOKEEPERS + REPLICAS + [ONCE]),
          f"containers: {running}")
    # The first start vouched for the new cluster, and ended.
    once = cluster.container(ONCE)
    try:
        code = exit_code(cluster, once, 180)
    except Failure as e:
        said = cluster.podman("logs", once, check=False)
        raise Failure(f"{e}; its log ends: {(said.stdout + said.stderr)[-3000:]}") from e
    said = cluster.podman("logs", once, check=False)
    check(code == "0" and ("created the cluster" in said.stdout
                           or "its fence is lifted" in said.stdout),
          f"{ONCE}: exit {code}: {said.stdout}{said.stderr}")


def replicas_ready(live):
    cluster = live.cluster
    for replica in REPLICAS:
        try:
            live.workers[replica] = poll(f"{replica} ready",
                                         lambda r=replica: replica_ready(cluster, r), 180)["worker_id"]
        except Failure as e:
            # Its own words: the containers go with the run.
            logs = cluster.podman("logs", cluster.container(replica), check=False)
            raise Failure(f"{e}; its log ends: {(logs.stdout + logs.stderr)[-3000:]}") from e
    check(len(set(live.workers.values())) == 3, f"worker IDs: {live.workers}")
    for replica in REPLICAS:
        check(issues_ids(cluster, replica, live.workers[replica]),
              f"{replica} did not issue an ID of worker {live.workers[replica]}")
    log(f"      worker IDs {live.workers}, ports {cluster.ports}")


def healthy(live):
    cluster = live.cluster
    for service in ZOOKEEPERS + REPLICAS:
        poll(f"{service} healthy", lambda s=service: cluster.health(cluster.container(s)) == "healthy",
             120, interval=1)
    modes = [re.search(r"Mode: (\w+)", cluster.exec(z, "zkServer.sh", "status").stdout).group(1)
             for z in ZOOKEEPERS]
    check(sorted(modes) == ["follower", "follower", "leader"], f"ZooKeeper modes: {modes}")
    # Old snapshots and transaction logs purged hourly (the compose file's
    # ZOO_AUTOPURGE_*): without it the data volumes grow for ever.
    for z in ZOOKEEPERS:
        conf = cluster.exec(z, "sh", "-c", 'cat "$ZOO_CONF_DIR/zoo.cfg"').stdout
        check("autopurge.purgeInterval=1" in conf and "autopurge.snapRetainCount=3" in conf,
              f"{z}: zoo.cfg does not purge: {conf}")


def non_root(live):
    cluster = live.cluster
    for replica in REPLICAS:
        uid = re.search(r"^Uid:\s+(\d+)", cluster.exec(replica, "cat", "/proc/1/status").stdout, re.M)
        check(uid and uid.group(1) != "0", f"{replica}'s daemon runs as uid {uid and uid.group(1)}")


# What Kubernetes' restricted profile and OpenShift give a container: an
# arbitrary uid in group 0, a read-only root file system, no capabilities,
# no privilege escalation, and the state directory on a volume of its own.
RESTRICTED = ["--user", "1000720000:0", "--read-only", "--cap-drop", "ALL",
              "--security-opt", "no-new-privileges", "--tmpfs", "/var/lib/snowflaked:rw,mode=1777"]


def image_alone(live):
    """The image as `docker run` starts it, with nothing but the variables a
    deployment sets, under the restricted context."""
    cluster = live.cluster
    settings = ["-e", "SNOWFLAKED_SERVICE=compose",
                "-e", "SNOWFLAKED_ZOOKEEPER_HOSTS=zk1:2181,zk2:2181,zk3:2181"]
    unready = f"{cluster.name}-unready"
    cluster.podman("run", "-d", "--name", unready, "--network", "none", *RESTRICTED, *settings,
                   IMAGE)
    check(cluster.podman("healthcheck", "run", unready, check=False).returncode != 0,
          "the health check passed for a daemon that cannot reach ZooKeeper")
    cluster.podman("rm", "--force", "--volumes", "--time", "0", unready)
    alone = f"{cluster.name}-image"
    port = free_port()
    cluster.podman("run", "-d", "--name", alone, "--network", f"{cluster.name}_default",
                   "-p", f"127.0.0.1:{port}:8080", *RESTRICTED, *settings, IMAGE)
    poll("the image's HEALTHCHECK healthy", lambda: cluster.health(alone) == "healthy", 120,
         interval=1)
    uid = cluster.podman("exec", alone, "id", "-u").stdout.strip()
    check(uid == "1000720000", f"the image runs as uid {uid}")
    # Its defaults listen on every address inside the container: the
    # published port answers.
    status, body = http_get(f"http://127.0.0.1:{port}/id/order")
    check(status == 200, f"/id/order on the published port: {status} {body}")
    its_worker = json.loads(cluster.podman("exec", alone, "curl", "-fsS",
                                           "http://127.0.0.1:8080/ready").stdout)["worker_id"]
    cluster.podman("stop", "--time", "30", alone)
    code = cluster.podman("inspect", "--format", "{{.State.ExitCode}}", alone).stdout.strip()
    check(code == "0", f"the container exited {code} on SIGTERM")
    check(its_worker in [e["worker_id"] for e in cluster.pool(REPLICAS[0])["notuse"]],
          f"worker ID {its_worker} was not given back")
    cluster.podman("rm", "--volumes", alone)


def image_tls_healthcheck(live):
    """The image serving TLS on another port, its config and certificate
    mounted as a deployment mounts them: its HEALTHCHECK (`snowflaked
    probe`) follows the config there and turns healthy, where a plain
    request to /ready gets no answer."""
    cluster = live.cluster
    tls_dir = os.path.join(live.work, "image-tls")
    os.makedirs(tls_dir)
    files = test_certificates.server_certificate(tls_dir, names=["snowflaked"], serial=7)
    for name in ("tls.crt", "tls.key"):  # the key: root's, read through group 0
        path = os.path.join(tls_dir, "mounted", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(files[name])
        os.chmod(path, 0o640)
    with open(os.path.join(live.source, "conf", "container.json")) as f:
        config = json.load(f)
    config["service"] = "compose"
    config["zookeeper"]["hosts"] = "zk1:2181,zk2:2181,zk3:2181"
    config["http"].update({"listen": "0.0.0.0:8443", "tls_cert_file": "/etc/snowflaked/tls/tls.crt",
                           "tls_key_file": "/etc/snowflaked/tls/tls.key"})
    config_file = os.path.join(tls_dir, "snowflaked.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    os.chmod(config_file, 0o644)
    name = f"{cluster.name}-tls"
    cluster.podman("run", "-d", "--name", name, "--network", f"{cluster.name}_default",
                   "-v", f"{config_file}:{CONFIG}:ro", "-v", f"{tls_dir}/mounted:/etc/snowflaked/tls:ro",
                   *RESTRICTED, IMAGE)
    poll("the TLS image's HEALTHCHECK healthy", lambda: cluster.health(name) == "healthy", 120, interval=1)
    plain = cluster.podman("exec", name, "curl", "-fsS", "-m", "2", "http://127.0.0.1:8443/ready", check=False)
    check(plain.returncode != 0, f"plain HTTP to the TLS port answered: {plain.stdout}")
    said = cluster.podman("exec", name, "snowflaked", "probe", "--config", CONFIG).stdout
    check(said.startswith("https://127.0.0.1:8443/ready: 200"), f"snowflaked probe in the container: {said}")
    cluster.podman("stop", "--time", "30", name)
    code = cluster.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    check(code == "0", f"the container exited {code} on SIGTERM")
    cluster.podman("rm", "--volumes", name)


def zookeeper_node_killed(live):
    cluster = live.cluster
    replica_ips = {cluster.podman("inspect", "--format",
                                  "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                                  cluster.container(r)).stdout.strip(): r for r in REPLICAS}
    sessions = {z: [ip for ip in clients_of(cluster, z) if ip in replica_ips] for z in ZOOKEEPERS}
    victim = max(ZOOKEEPERS, key=lambda z: len(sessions[z]))
    check(sessions[victim], f"no replica session found on any ZooKeeper node: {sessions}")
    cluster.podman("kill", cluster.container(victim))
    survivors = [z for z in ZOOKEEPERS if z != victim]
    poll("every replica's session on a surviving node",
         lambda: set(replica_ips) <= {ip for z in survivors for ip in clients_of(cluster, z)}, 60,
         interval=0.5)
    for replica in REPLICAS:
        status = poll(f"{replica} connected and ready", lambda r=replica: (
            lambda s: s if s[1].get("coordination", {}).get("zookeeper") == "connected"
            and replica_ready(cluster, r) else None)(http_json(cluster.url(r, "/status"))), 30)
        check(status[1]["worker_id"] == live.workers[replica], f"{replica}: {status[1]}")
        check(issues_ids(cluster, replica, live.workers[replica]), f"{replica} issues no ID")
    # A write through the two nodes left: pool status makes a probe node.
    check(len(cluster.pool(REPLICAS[0])["inuse"]) == 3, "pool status after the kill")
    log(f"      killed {victim} ({len(sessions[victim])} replica session(s) on it)")


def replica_stopped(live):
    cluster = live.cluster
    cluster.compose("stop", "snowflaked2", timeout=120)
    code = cluster.podman("inspect", "--format", "{{.State.ExitCode}}",
                          cluster.container("snowflaked2")).stdout.strip()
    check(code == "0", f"snowflaked2 exited {code}")
    pool = cluster.pool(REPLICAS[0])
    check(live.workers["snowflaked2"] in [e["worker_id"] for e in pool["notuse"]] and
          live.workers["snowflaked2"] not in [e["worker_id"] for e in pool["inuse"]],
          f"worker ID {live.workers['snowflaked2']} is not free: in use {pool['inuse']}")


def zookeeper_acl(cluster, path, identity, container=None):
    """A node's ACL as zkCli.sh getAcl prints it to a client of `identity`
    (ZooKeeper shows a digest as "x" to one without the right to change the
    ACL), asked inside `container` or a compose ZooKeeper container still
    running (an earlier step killed one). The identity goes in on stdin, not
    on a command line."""
    if not container:
        running = [z for z in ZOOKEEPERS if cluster.podman(
            "inspect", "--format", "{{.State.Running}}", cluster.container(z)).stdout.strip() == "true"]
        check(running, "no ZooKeeper container is running")
        container = cluster.container(running[0])
    return run(["podman", "exec", "-i", container, "zkCli.sh", "-server", "127.0.0.1:2181"],
               env=cluster.env, timeout=120,
               input=f"addauth digest {identity}\ngetAcl {path}\nquit\n").stdout


KUBE_PODS = {"snowflaked": 2, "snowflaked-seq": 1}  # pods played of each Deployment
ZOOKEEPER_PODS = 3  # zookeeper.yaml's replicas
KUBE_DIR = "deploy/kubernetes"
ADMIN_PORT = 9090  # the ConfigMap's http.admin_listen


def kube_addresses(cluster, count):
    """Addresses at the top of the compose network's subnet, clear of the
    compose containers' (given from the bottom): the pods' own, as
    Kubernetes gives each pod one."""
    net = json.loads(cluster.podman("network", "inspect", f"{cluster.name}_default").stdout)[0]
    hosts = list(ipaddress.ip_network(net["subnets"][0]["subnet"]).hosts())
    return [str(h) for h in hosts[-count - 1:-1]]


def podman_objects(cluster):
    """Every pod, container, volume and secret podman has, by name."""
    podman = cluster.podman
    listing = {"pods": podman("pod", "ps", "--format", "{{.Name}}").stdout.split(),
               "containers": podman("ps", "-a", "--format", "{{.Names}}").stdout.split(),
               "volumes": podman("volume", "ls", "--format", "{{.Name}}").stdout.split(),
               "secrets": podman("secret", "ls", "--format", "{{.Name}}").stdout.split()}
    return {kind: set(names) for kind, names in listing.items()}


class KubeZooKeeper:
    """deploy/kubernetes/zookeeper.yaml played (kube_manifest.py says how),
    its ensemble formed, and taken down with its claims."""

    def __init__(self, live, addresses):
        self.cluster = live.cluster
        with open(os.path.join(live.source, KUBE_DIR, "zookeeper.yaml")) as f:
            self.played = kube_manifest.zookeeper_playable(f.read(), self.cluster.env["ZOOKEEPER_IMAGE"],
                                                           addresses)
        self.file = os.path.join(live.work, "kube-zookeeper.yaml")
        with open(self.file, "w") as f:
            f.write(self.played.yaml())
        self.hosts = ",".join(f"{p.ip}:2181" for p in self.played.pods)  # for a client without the names

    def container(self, pod):
        return f"{pod.name}-zookeeper"  # podman names a pod's container <pod>-<container>

    def play(self):
        self.before = podman_objects(self.cluster)
        self.cluster.podman("kube", "play", "--network", f"{self.cluster.name}_default",
                            *self.played.ip_flags(), self.file, timeout=300)

        def mode(pod):
            said = self.cluster.podman("exec", self.container(pod), "zkServer.sh", "status", check=False)
            found = re.search(r"Mode: (\w+)", said.stdout + said.stderr)
            return found.group(1) if found else None
        modes = poll("zookeeper.yaml's ensemble formed (zkServer.sh status, its readinessProbe)",
                     lambda: (lambda m: m if all(x in ("leader", "follower") for x in m) else None)(
                         [mode(p) for p in self.played.pods]), 180)
        check(sorted(modes) == ["follower", "follower", "leader"], f"zookeeper.yaml's servers: {modes}")
        return modes

    def down(self):
        self.cluster.podman("kube", "down", self.file, timeout=180)
        self.cluster.podman("volume", "rm", *self.played.claims)
        after = podman_objects(self.cluster)
        left = {kind: sorted(after[kind] - self.before[kind]) for kind in after}
        check(not any(left.values()), f"left after zookeeper.yaml's kube down: {left}")


class KubeRound:
    """deploy/kubernetes played once by `podman kube play`, plain or TLS, and
    taken down as the kubelet and `kubectl delete` would."""

    def __init__(self, live, identity, tls, addresses, zookeeper, claim_made=False):
        self.cluster, self.work, self.tls = live.cluster, live.work, tls
        with open(os.path.join(live.source, KUBE_DIR, "snowflaked.yaml")) as f, \
                open(os.path.join(live.source, KUBE_DIR, "cluster-create.yaml")) as g:
            main_text, job_text = f.read(), g.read()
        ips = {}
        for name, count in KUBE_PODS.items():
            ips[name], addresses = addresses[:count], addresses[count:]
        self.secrets = {}
        tls_config = None
        if tls:
            # What docs/operations.md's TLS section says for Kubernetes:
            # cert-manager's Secret mounted, its files named, and the other
            # pods' certificates checked against its CA for the Service's name.
            files = strict_service.certificates(self.work, [ip for v in ips.values() for ip in v])
            self.ca_file = os.path.join(self.work, "ca.crt")
            self.secrets["snowflaked-tls"] = files
            mount = kube_manifest.TLS_MOUNT
            tls_config = {"secret": "snowflaked-tls",
                          "keys": {"tls_cert_file": f"{mount}/tls.crt", "tls_key_file": f"{mount}/tls.key",
                                   "forward_ca_file": f"{mount}/ca.crt",
                                   "forward_tls_name": strict_service.SERVICE_NAME}}
        else:
            self.ca_file = None
        self.played = kube_manifest.playable(main_text, job_text, IMAGE, KUBE_SERVICE, ips, tls_config,
                                             claim_made, zookeeper.played.host_aliases)
        self.secrets[self.played.secret_name] = {self.played.secret_key: identity}
        self.file = os.path.join(self.work, "kube-tls.yaml" if tls else "kube.yaml")
        with open(self.file, "w") as f:
            f.write(self.played.yaml())

    def everything(self):
        return podman_objects(self.cluster)

    def play(self):
        """The Secrets made first, as the manifest says, then the files; the
        Job's exit code and what it said; {pod: its daemon's container}."""
        self.before = self.everything()
        for name, data in self.secrets.items():
            for copy_name in self.played.copies_of(name):  # a pod each (kube_manifest)
                secret_file = os.path.join(self.work, f"secret-{copy_name}.yaml")
                with open(os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                    f.write(kube_manifest.secret_for_podman(copy_name, data))
                self.cluster.podman("secret", "create", copy_name, secret_file)
        self.cluster.podman("kube", "play", "--network", f"{self.cluster.name}_default",
                            *self.played.ip_flags(), self.file, timeout=300)
        made = self.everything()
        played_pods = sorted(made["pods"] - self.before["pods"])
        wanted = sorted([p.name for p in self.played.pods] + [self.played.job_name])
        check(played_pods == wanted, f"pods played: {played_pods}, not {wanted}")
        new = sorted(c for c in made["containers"] - self.before["containers"] if not c.endswith("-infra"))
        job = [c for c in new if c.startswith(self.played.job_name)]
        check(len(job) == 1, f"the Job's containers: {job}")
        code = exit_code(self.cluster, job[0], 120)
        said = self.cluster.podman("logs", job[0], check=False)
        said = said.stdout + said.stderr
        check(code == "0", f"the Job's cluster create exited {code}: {said}")
        self.containers = {}
        for pod in self.played.pods:
            found = [c for c in new if c.startswith(pod.name)]
            check(len(found) == 1, f"{pod.name}'s containers: {found}")
            self.containers[pod.name] = found[0]
        return said

    def url(self, pod, path, port=8080):
        return f"{'https' if self.tls else 'http'}://{pod.ip}:{port}{path}"

    def fetch(self, pod, path, port=8080):
        """(status, body) of a pod, from outside it, as the kubelet's probes
        and the Service's clients ask (verified against the CA over TLS);
        status 0 when nothing answered."""
        context = ssl.create_default_context(cafile=self.ca_file) if self.tls else None
        try:
            with urllib.request.urlopen(self.url(pod, path, port), timeout=5, context=context) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return 0, b""

    def get(self, pod, path, port=8080):
        """(status, JSON) of a pod; None for a body that is not JSON."""
        status, body = self.fetch(pod, path, port)
        try:
            return status, json.loads(body or b"null")
        except ValueError:
            return status, None

    def pod_checks(self, pod, password):
        """Restricted, its address its own, ready by its Deployment's probe,
        alive; the ConfigMap's config, the operators' routes on the admin
        port only. Its worker ID."""
        cluster, container = self.cluster, self.containers[pod.name]
        state = cluster.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container).stdout
        if not state.startswith("running"):  # exited: say why before anything else
            logs = cluster.podman("logs", container, check=False)
            raise Failure(f"{container} is {state}: {logs.stdout[-3000:]}{logs.stderr[-3000:]}")
        inspect = json.loads(cluster.podman("inspect", container).stdout)[0]
        check(inspect["HostConfig"].get("ReadonlyRootfs") is True,
              f"{container}: the root file system is writable")
        check(inspect["Config"].get("User", "").startswith("10001"),
              f"{container}: user {inspect['Config'].get('User')}")
        caps = run(["grep", "CapEff", f"/proc/{inspect['State']['Pid']}/status"]).stdout.split()[1]
        check(int(caps, 16) == 0, f"{container}: the daemon has capabilities {caps}")
        # The settings come from the files, but for the pod's own address
        # (the downward API's); the password in no variable.
        env = dict(e.split("=", 1) for e in inspect["Config"].get("Env") or [])
        check([k for k in env if k.startswith("SNOWFLAKED_")] == [kube_manifest.ADVERTISE] and
              env[kube_manifest.ADVERTISE] == f"{pod.ip}:8080" and
              not [k for k, v in env.items() if password in v],
              f"{container}: its environment's settings: {sorted(env)}")
        ready = "/ready?for=seq" if pod.deployment.endswith("-seq") else "/ready"
        poll(f"{pod.name} ready (its readinessProbe, {ready})", lambda: self.get(pod, ready)[0] == 200, 120)
        check(self.get(pod, "/health")[0] == 200, f"{pod.name}: its livenessProbe, /health, fails")
        # The ConfigMap's config, not the image's (whose service is "default").
        said = self.get(pod, "/status", ADMIN_PORT)[1]
        check(said and said["service"] == KUBE_SERVICE and said["mode"] == "recycle",
              f"{pod.name}: /status on the admin port says {said}")
        check(self.get(pod, "/status")[0] == 404, f"{pod.name}: /status answered on the clients' port")
        status, metrics = self.fetch(pod, "/metrics", ADMIN_PORT)
        check(status == 200 and b"snowflake_" in metrics, f"{pod.name}: /metrics on the admin port: {status}")
        worker = poll(f"{pod.name}'s worker ID", lambda: (self.get(pod, "/ready")[1] or {}).get("worker_id"), 60)
        status, ids = self.get(pod, "/id/order?count=3")
        check(status == 200 and len(ids["ids"]) == 3, f"{pod.name} issued {status} {ids}")
        return worker

    def strict_through_service(self, tag):
        """A strict tag made in a pod (its identity may), its owner one of the
        pods, then asked through the IDs' Service by two clients."""
        pods = self.played.pods
        self.cluster.podman("exec", self.containers[pods[0].name], "snowflaked", "seq", "create", tag,
                            "--order", "strict", "--step", "5", "--config", CONFIG)

        def owner():
            listed = self.cluster.podman("exec", self.containers[pods[0].name], "snowflaked", "seq", "list",
                                         "--json", "--config", CONFIG, check=False)
            rows = json.loads(listed.stdout) if listed.returncode == 0 else []
            row = next((r for r in rows if r["tag"] == tag), {})
            return (row.get("owner") or {}).get("address")
        address = poll(f"{tag}'s owner", owner, 120)
        check(address in [f"{p.ip}:8080" for p in pods], f"{tag}'s owner advertises {address}, no pod's")
        service = [p.ip for p in pods if p.deployment == "snowflaked"]
        records = strict_service.ask_through_service(service, 8080, tag, 100, ca_file=self.ca_file)
        answered, pairs, asked = strict_service.check_answered_in_order(records)
        check(asked == len(service), f"the Service's {len(service)} pods were not all asked")
        forwarded = sum(1 for r in records if f"{r[2]}:8080" != address)
        check(forwarded > 0, f"no request reached a pod that does not own {tag}")
        return f"{answered} answered in order ({pairs} ordered pairs), {forwarded} passed on to {address}"

    def stop(self):
        """As the kubelet deletes a pod: its containers stopped with the grace
        period (SIGTERM), then the pods; each daemon exits 0."""
        cluster = self.cluster
        containers = list(self.containers.values())
        cluster.podman("stop", "--time", "30", *containers, timeout=120)
        for pod in [p.name for p in self.played.pods] + [self.played.job_name]:
            cluster.podman("pod", "stop", pod, timeout=120)
        for container in containers:
            code = cluster.podman("inspect", "--format", "{{.State.ExitCode}}", container).stdout.strip()
            check(code == "0", f"{container} exited {code} on SIGTERM")

    def down(self, keep_claim):
        """`kube down`, and what `kubectl delete -f` leaves removed by hand:
        the Secrets and (podman 4.3's) the volumes filled from the ConfigMap
        and the Secrets; the Job's claim too, unless kept for a next round."""
        cluster = self.cluster
        cluster.podman("kube", "down", self.file, timeout=180)
        secrets = [c for name in self.secrets for c in self.played.copies_of(name)]
        for name in secrets:
            cluster.podman("secret", "rm", name)
        cluster.podman("volume", "rm", *self.played.copies_of(self.played.config_map_name), *secrets)
        if not keep_claim:
            cluster.podman("volume", "rm", self.played.claim_name)
        after = self.everything()
        left = {kind: sorted(after[kind] - self.before[kind]) for kind in after}
        if keep_claim:
            left["volumes"] = [v for v in left["volumes"] if v != self.played.claim_name]
        check(not any(left.values()), f"left after kube down: {left}")


def kube_play(live):
    """deploy/kubernetes with `podman kube play`, on the compose cluster's
    network: zookeeper.yaml's ensemble first, then snowflaked.yaml and
    cluster-create.yaml against it (the ConfigMap's zookeeper.hosts as
    shipped): the image and the service are what a user edits too, and the
    Secret with ZooKeeper's credentials is made first, as the manifest says. The service is a pool of its own, so that every node
    of it, the Job's root first, is the Secret's identity's. Played twice:
    plain, then with TLS as docs/operations.md's TLS section sets it up; the
    Job the second time finds its record on its claim. podman 4.3 plays the
    ConfigMap, the Secrets' volumes, the Deployments and the claim, and skips
    the Services, the PodDisruptionBudgets and the NetworkPolicy; what it
    needs changed is in kube_manifest.py. It runs no probes without systemd,
    so they are asked by hand."""
    cluster = live.cluster
    addresses = kube_addresses(cluster, ZOOKEEPER_PODS + sum(KUBE_PODS.values()))
    zookeeper = KubeZooKeeper(live, addresses[:ZOOKEEPER_PODS])
    modes = zookeeper.play()
    addresses = addresses[ZOOKEEPER_PODS:]
    # The manifest's `openssl rand -hex 24`.
    identity = f"snowflaked:{os.urandom(24).hex()}"
    password = identity.split(":", 1)[1]

    plain = KubeRound(live, identity, False, addresses, zookeeper)
    said = plain.play()
    check(("created the cluster" in said or "its fence is lifted" in said) and "recorded in" in said,
          f"the Job's cluster create said: {said}")
    workers = {pod.name: plain.pod_checks(pod, password) for pod in plain.played.pods}
    check(len(set(workers.values())) == len(workers), f"worker IDs: {workers}")
    pool = json.loads(cluster.podman("exec", plain.containers[plain.played.pods[0].name], "snowflaked",
                                     "pool", "status", "--config", CONFIG, "--json").stdout)
    check(pool["time_source"] == "zookeeper" and set(workers.values()) <=
          {e["worker_id"] for e in pool["inuse"]}, f"pool status in a pod: {pool}")
    # The daemon's node in ZooKeeper is the Secret's identity's: readable by
    # all, changed by it alone (ZooKeeper's digest: base64 of its SHA-1).
    digest = base64.b64encode(hashlib.sha1(identity.encode()).digest()).decode()
    for worker in workers.values():
        acl = zookeeper_acl(cluster, f"/snowflake/{KUBE_SERVICE}/pool/inuse/{worker}", identity,
                            zookeeper.container(zookeeper.played.pods[0]))
        check(f"'digest,'snowflaked:{digest}\n: cdrwa" in acl and "'world,'anyone\n: r\n" in acl,
              f"the ACL of worker ID {worker}'s node: {acl}")
    # A client without the Secret (a compose replica, asked about this
    # pool) reads the pool, but ZooKeeper refuses it the probe node.
    stranger = cluster.pool(REPLICAS[0], service=KUBE_SERVICE, hosts=zookeeper.hosts)
    check(stranger["time_source"] == "newest_heartbeat" and
          set(workers.values()) <= {e["worker_id"] for e in stranger["inuse"]},
          f"pool status without the Secret's identity: {stranger}")
    plain_strict = plain.strict_through_service("ticket")
    plain.stop()
    pool = cluster.pool(REPLICAS[0], service=KUBE_SERVICE, hosts=zookeeper.hosts)
    free = {e["worker_id"] for e in pool["notuse"]}
    # Stopped together with no daemon left running, a pod whose move back
    # found another's first leaves its node marked released, which the next
    # daemon's first pass returns (docs/operations.md): held by none either way.
    marked = {e["worker_id"] for e in pool["inuse"] if e.get("state") == "released"}
    held = {e["worker_id"] for e in pool["inuse"]} - marked
    check(set(workers.values()) <= free | marked and not set(workers.values()) & held,
          f"the deleted pods' worker IDs {workers} are not free or released: in use {pool['inuse']}")
    plain.down(keep_claim=True)
    log(f"      zookeeper.yaml: {len(modes)} servers ({', '.join(sorted(modes))}), the pods' ensemble")
    log(f"      plain: {len(workers)} pods (worker IDs {sorted(workers.values())}, given back on SIGTERM); "
        f"strict tag through the Service: {plain_strict}")

    tls = KubeRound(live, identity, True, addresses, zookeeper, claim_made=True)
    said = tls.play()
    check("exists" in said and "nothing to do" in said, f"the Job run again said: {said}")
    for pod in tls.played.pods:
        tls.pod_checks(pod, password)
    tls_strict = tls.strict_through_service("ticket-tls")
    tls.stop()
    tls.down(keep_claim=False)
    zookeeper.down()
    log(f"      TLS: the Job again, with its record: \"{said.strip().splitlines()[0]}\"; "
        f"strict tag through the Service: {tls_strict}")


RUNBOOK_BLOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                             "runbook-block.py")
FENCE = "snowflaked-fence"  # the container docs/operations.md's `restore-compose` block names


def ensemble_volumes(cluster):
    """{volume: its directory on the host} of the ensemble's data volumes."""
    names = [v for v in cluster.listing()["volumes"]
             if re.fullmatch(rf"{re.escape(cluster.name)}_zk\d-(data|datalog)", v)]
    check(len(names) == 6, f"the ensemble's data volumes: {names}")
    return {v: cluster.podman("volume", "inspect", "--format", "{{.Mountpoint}}", v).stdout.strip()
            for v in names}


def typed_compose_runbook(live, restore, config=None):
    """docs/operations.md's `restore-compose` block typed into bash as an
    operator does, in the source tree, `docker` being podman and `docker
    compose` podman-compose on this run's project: up to its restore step,
    then restore() once the command's container runs (or has ended), then the
    rest. Returns bash's exit status and what it printed."""
    cluster = live.cluster
    text = run([sys.executable, RUNBOOK_BLOCK] + (["--config", config] if config else [])
               + ["restore-compose", os.path.join(live.source, "docs", "operations.md")]).stdout
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines)
          if line.startswith("#") and "restore zookeeper" in line.lower()]
    check(len(at) == 1, f"runbook restore-compose: not one comment line that says "
          f"\"Restore ZooKeeper\":\n{text}")
    shim = ("docker() { if [ \"$1\" = compose ]; then shift; podman-compose -p "
            f"{cluster.name} -f docker-compose.yml \"$@\"; else podman \"$@\"; fi; }}\n")
    shell = subprocess.Popen(dying_with_us(["bash", "-s"]), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=cluster.env, cwd=live.source, start_new_session=True)
    try:
        shell.stdin.write(shim + "".join(lines[:at[0]]))
        shell.stdin.flush()
        poll(f"the block's first steps: the ensemble stopped, {FENCE} started", lambda: (
            cluster.podman("inspect", "--format", "{{.State.Status}}", FENCE, check=False)
            .stdout.strip() in ("running", "exited", "stopped")
            and all(cluster.podman("inspect", "--format", "{{.State.Status}}",
                                   cluster.container(z)).stdout.strip() in ("exited", "stopped")
                    for z in ZOOKEEPERS)), 240, interval=1)
        restore()
        try:
            out, _ = shell.communicate("".join(lines[at[0]:]), timeout=600)
        except subprocess.TimeoutExpired as e:
            raise Failure("the runbook: still running 600 s after ZooKeeper's return") from e
        return shell.returncode, out
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()


def compose_restore_runbook(live):
    """ZooKeeper's volumes restored from a backup taken a moment before, by
    docs/operations.md's `restore-compose` block as written: the replicas
    and the ensemble stopped, `cluster fence` started detached without the
    ensemble (--no-deps), the volumes put back, the ensemble started; the
    block exits 0 once the command has, which fenced the restored data
    (not the old: it waited for the ensemble). Then the replicas' `up -d`,
    as the doc says: a replica reads the fence, and answers cluster_fenced
    or issues above it (the fence may be over by then). And the block with a
    config the command cannot read: it exits non-zero."""
    cluster = live.cluster
    volumes = ensemble_volumes(cluster)
    backup = os.path.join(live.work, "zookeeper-backup")
    os.makedirs(backup)
    cluster.compose("stop", *ZOOKEEPERS, timeout=300)
    for volume, path in volumes.items():
        run(["cp", "-a", path, os.path.join(backup, volume)])
    cluster.compose("start", *ZOOKEEPERS, timeout=300)
    poll("snowflaked1 issues after the backup", lambda: issues_ids(
        cluster, "snowflaked1", live.workers["snowflaked1"]), 180, interval=1)

    def put_back():
        for volume, path in volumes.items():
            run(["find", path, "-mindepth", "1", "-delete"])
            run(["cp", "-a", os.path.join(backup, volume) + "/.", path])

    status, out = typed_compose_runbook(live, put_back)
    said = cluster.podman("logs", FENCE, check=False).stdout
    check(status == 0, f"the runbook: exit {status}:\n{out}")
    check("fenced until" in said and "confirmed: every daemon" in said, f"{FENCE} said:\n{said}")
    cluster.podman("rm", FENCE)
    cluster.compose("up", "-d", *REPLICAS, timeout=300)  # as the doc says, after the block

    # The replica reads the command's fence. Whether it still answers
    # cluster_fenced depends on how long all this took (the fence lasts
    # 122 s with the container config): an ID it issues is above the fence.
    def fence_read():
        status, body = http_json(cluster.url("snowflaked1", "/status"))
        fence = (body.get("cluster") or {}).get("fence") if status == 200 else None
        return fence if fence and fence.get("kind") == "history_lost" else None
    fence = poll("snowflaked1 reads the runbook's fence (/status)", fence_read, 180, interval=1)
    answer = poll("snowflaked1 answers /id", lambda: (lambda r: r if r[0] in (200, 503) else None)(
        http_json(cluster.url("snowflaked1", "/id/order?count=5"))), 60, interval=1)
    if answer[0] == 503:
        check(answer[1].get("error") == "cluster_fenced", f"snowflaked1 while fenced: {answer}")
    else:
        stamps = [(int(i) >> 22) + DEFAULT_EPOCH_MS for i in answer[1]["ids"]]
        check(min(stamps) > fence["until_ms"], f"snowflaked1 issued {stamps} at or below the fence {fence}")
    log(f"      the block exited 0; snowflaked1 read the fence (until {fence['until_ms']}) and "
        f"answers {answer[0]} {answer[1].get('error', 'above it')}")

    status, out = typed_compose_runbook(live, lambda: None, "/etc/snowflaked/no-such.json")
    said = cluster.podman("logs", FENCE, check=False).stdout
    check(status != 0, f"the runbook with a config the command cannot read: exit 0\n{said}")
    cluster.podman("rm", FENCE)
    cluster.compose("up", "-d", *REPLICAS, timeout=300)
    log(f"      with a config it cannot read: exit {status}")


def zookeeper_wiped_up_again(live):
    """The ensemble rebuilt empty (its containers and data volumes gone) and
    `up -d` run again, as an operator would: the one-shot, whose volume
    remembers the cluster, exits 3 and vouches for nothing; a replica that
    lived through it fences the cluster."""
    cluster = live.cluster
    once = cluster.container(ONCE)
    first_start = cluster.podman("inspect", "--format", "{{.State.StartedAt}}", once).stdout.strip()
    cluster.podman("rm", "--force", "--time", "0", *[cluster.container(z) for z in ZOOKEEPERS])
    wiped = [v for v in cluster.listing()["volumes"]
             if re.fullmatch(rf"{re.escape(cluster.name)}_zk\d-(data|datalog)", v)]
    check(len(wiped) == 6, f"the ensemble's data volumes: {wiped}")
    cluster.podman("volume", "rm", *wiped)
    cluster.compose("up", "-d", timeout=300)

    def rerun_ended():
        st = cluster.podman("inspect", "--format", "{{.State.StartedAt}}|{{.State.Status}}|"
                            "{{.State.ExitCode}}", once).stdout.strip().split("|")
        return st if st[0] != first_start and st[1] in ("exited", "stopped") else None
    _, _, code = poll(f"{ONCE} run again, ended", rerun_ended, 240, interval=1)
    said = cluster.podman("logs", once, check=False)  # both runs: the first made the cluster
    check(code == "3" and "not new" in said.stdout + said.stderr,
          f"{ONCE} after the wipe: exit {code}: {said.stdout}{said.stderr}")
    fence = poll("snowflaked1 fences the cluster", lambda: (
        lambda s: s[1].get("cluster", {}).get("fence") if s[0] == 200 else None)(
            http_json(cluster.url("snowflaked1", "/status"))), 120)
    check(fence.get("kind") == "history_lost", f"snowflaked1's fence: {fence}")
    log(f"      {ONCE}: exit 3; snowflaked1 fenced until {fence.get('until')}")


def down_removes_all(live):
    cluster = live.cluster
    cluster.compose("down", "-v", timeout=300)
    left = cluster.listing()
    check(not left["containers"] and not left["volumes"], f"left after down -v: {left}")
    if left["networks"]:
        # podman-compose 1.0.3 (Debian 12) removes no networks on down;
        # docker compose does.
        log(f"      podman-compose left the network {left['networks']}: removed")
        for network in left["networks"]:
            cluster.podman("network", "rm", network)


STEPS = [
    ("a base image from the Debian 12 root (no registry but Debian's here)",
     base_image),
    ("the images, side by side: the ZooKeeper stand-in from Debian's zookeeper package, "
     "and packaging/Dockerfile's two stages by `podman-compose build`; the build stage's .deb copied out",
     images),
    ("docker-compose.yml: up --build (the images built above: cached layers) starts "
     "3 ZooKeeper nodes and 3 replicas",
     compose_up),
    ("each replica becomes ready with a worker ID of its own and issues IDs on its port",
     replicas_ready),
    ("health checks turn healthy: the ZooKeeper nodes' zkServer.sh status and the replicas' /ready",
     healthy),
    ("the replicas run as the image's non-root user",
     non_root),
    ("the image on its own, restricted (any uid in group 0, read-only, no capabilities) and set "
     "by SNOWFLAKED_* alone: its HEALTHCHECK fails while not ready, turns healthy once ready, "
     "its published port serves; SIGTERM gives the worker ID back and exits 0",
     image_alone),
    ("the image serving TLS on another port, config and certificate mounted: its HEALTHCHECK "
     "(snowflaked probe) follows the config and turns healthy",
     image_tls_healthcheck),
    ("killing the ZooKeeper node the replicas are connected to leaves every replica serving",
     zookeeper_node_killed),
    ("stopping one replica gives its worker ID back",
     replica_stopped),
    ("deploy/kubernetes by `podman kube play`, its Secret made first, plain then TLS: the pods "
     "restricted, ready by their Deployment's probe, issuing, their config from the ConfigMap, "
     "their address from the downward API, their ZooKeeper identity from the Secret (its node's "
     "ACL; refused to a client without it); a strict tag asked through the Service from two "
     "clients, every request answered in real-time order; stopped (SIGTERM), the pods give their "
     "worker IDs back; the Job run again finds its record; kube down leaves nothing",
     kube_play),
    ("ZooKeeper's volumes restored from a backup by docs/operations.md's compose runbook as "
     "written: it exits 0 once `cluster fence` has, non-zero when it failed; after `up -d` a "
     "replica reads the fence and issues nothing at or below it",
     compose_restore_runbook),
    ("ZooKeeper's volumes lost and `up -d` again: the one-shot remembers the cluster on its "
     "volume and refuses it (exit 3); a replica that lived through it fences the cluster",
     zookeeper_wiped_up_again),
    ("down -v removes the containers and volumes",
     down_removes_all),
]


def main(source, deb_dir=None):
    for stale in stale_scratch_dirs(KIND):
        log(f"      removing {stale}, left by a run that was killed")
        release_store(stale)
    work = scratch_dir(KIND)
    firewall = Firewall()
    live = Live(source, deb_dir, work)
    try:
        for title, action in STEPS:
            with step(title):
                action(live)
    finally:
        release_store(work)
        firewall.restore()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main_guard(lambda: main(os.path.abspath(sys.argv[1]), *sys.argv[2:]))
