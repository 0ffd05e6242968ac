#!/usr/bin/env python3
"""A real snowflaked cluster for the client libraries' tests: a ZooKeeper
server from Debian's package on a free loopback port with a temp data dir,
and N snowflaked daemons (recycle mode, worker-ID leases on, short leases so
that a test sees them run out) on ports picked free, each over TLS with a
test CA of its own if asked. The Java, Go and Python tests all drive this
one harness, so each library is proved against the same cluster.

    cluster.py --binary PATH [--daemons N] [--tls]

It prints one JSON line once every daemon is ready:
    {"servers": ["http://127.0.0.1:P", ...], "cacert": PATH|null,
     "zookeeper": "127.0.0.1:P", "pids": [..]}
then reads commands from stdin, one a line, and answers each with one line,
"ok" or "error: <why>":
    kill I      SIGKILL daemon I (0-based); its port stays its own
    stop I      SIGSTOP it (frozen), cont I: SIGCONT
    start I     start daemon I again on its port (after kill), and wait until ready
    zkstop      SIGSTOP ZooKeeper (the daemons' leases run out: 503s), zkcont: SIGCONT
    seq ARGS    `snowflaked seq ARGS --config <daemon 0's config>`
    cli ARGS    `snowflaked ARGS --config <daemon 0's config>` (lease forget N, ...)
    ready       wait (up to 30 s) until every daemon answers /ready 200: a test
                that froze or killed one leaves the cluster as it found it
    quit        stop everything (also on EOF, SIGTERM, or the parent's death)
Everything it starts dies with it (PR_SET_PDEATHSIG), and its temp dir goes.
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import ssl

PR_SET_PDEATHSIG = 1


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(what, probe, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not within {timeout} s")


def zookeeper_command(port, word):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(word.encode())
            return s.makefile().read()
    except OSError:
        return ""


def openssl(work, *args):
    subprocess.run(["openssl", *args], check=True, cwd=work, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_certificates(work):
    """A CA of the test's own and a certificate for 127.0.0.1 it signs."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(work, "req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=client test CA")
    openssl(work, "req", "-new", *key, "-keyout", "tls.key", "-out", "tls.csr",
            "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "tls.cnf"), "w", encoding="utf-8") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl(work, "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-set_serial", "1", "-days", "2", "-out", "tls.crt", "-extfile", "tls.cnf")
    return {name: os.path.join(work, name) for name in ("ca.crt", "tls.crt", "tls.key")}


class Cluster:
    def __init__(self, binary, daemons, tls, work):
        self.binary = binary
        self.work = work
        self.zk_port = free_port()
        self.zk = None
        self.certs = make_certificates(work) if tls else None
        self.ports = [free_port() for _ in range(daemons)]
        self.opaque_key = os.path.join(work, "opaque.key")
        with open(self.opaque_key, "w", encoding="utf-8") as f:
            f.write(os.urandom(32).hex() + "\n")
        self.procs = [None] * daemons
        self.configs = [self.write_config(i) for i in range(daemons)]

    def write_config(self, i):
        config = {
            "service": "clients",
            "coordinator": {
                "type": "recycle", "state_dir": os.path.join(self.work, f"state-{i}"),
                "heartbeat_interval_ms": 300, "lease_timeout_ms": 1500,
                "reclaim_after_ms": 2500, "safety_margin_ms": 500, "max_skew_ms": 200,
                "max_boot_wait_ms": 5000, "persist_interval_ms": 100,
            },
            "zookeeper": {"hosts": f"127.0.0.1:{self.zk_port}", "root": "/snowflake/clients",
                          "session_timeout_ms": 2000, "connect_timeout_ms": 2000},
            "http": {"io_threads": 1, "listen": f"127.0.0.1:{self.ports[i]}"},
            "leases": {"enabled": True, "reserved_worker_ids": 0},
            "forms": {"opaque_key_file": self.opaque_key},
        }
        if self.certs:
            config["http"].update({"tls_cert_file": self.certs["tls.crt"],
                                   "tls_key_file": self.certs["tls.key"],
                                   "forward_ca_file": self.certs["ca.crt"]})
        path = os.path.join(self.work, f"daemon-{i}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        return path

    def url(self, i):
        return f"{'https' if self.certs else 'http'}://127.0.0.1:{self.ports[i]}"

    def start_zookeeper(self):
        data = os.path.join(self.work, "zk")
        os.makedirs(data)
        cfg = os.path.join(self.work, "zoo.cfg")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(f"tickTime=100\ninitLimit=20\nsyncLimit=10\ndataDir={data}\n"
                    f"clientPort={self.zk_port}\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"
                    "minSessionTimeout=200\nmaxSessionTimeout=60000\n")
        log = open(os.path.join(self.work, "zookeeper.log"), "w", encoding="utf-8")
        self.zk = subprocess.Popen(
            ["java", "-Xmx256m", "-cp",
             "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        poll("ZooKeeper serving", lambda: "Mode:" in zookeeper_command(self.zk_port, "srvr"), 60)
        # The cluster is new and this harness vouches for it (no fence to wait out).
        self.snowflaked(["cluster", "create", "--config", self.configs[0], "--wait", "20000"])

    def snowflaked(self, args):
        done = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"snowflaked {' '.join(args)}: exit {done.returncode}: "
                               f"{done.stderr.strip()}")
        return done.stdout

    def ready(self, i):
        context = None
        if self.certs:
            context = ssl.create_default_context(cafile=self.certs["ca.crt"])
        try:
            with urllib.request.urlopen(self.url(i) + "/ready", timeout=2, context=context) as r:
                return r.status == 200
        except OSError:
            return False

    def start(self, i):
        log = open(os.path.join(self.work, f"daemon-{i}.log"), "a", encoding="utf-8")
        self.procs[i] = subprocess.Popen([self.binary, "--config", self.configs[i]],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=die_with_parent)
        def up():
            if self.procs[i].poll() is not None:
                raise RuntimeError(f"daemon {i} exited {self.procs[i].returncode}")
            return self.ready(i)
        poll(f"daemon {i} ready", up, 30)

    def signal(self, i, sig):
        proc = self.procs[i]
        if proc is None or proc.poll() is not None:
            raise RuntimeError(f"daemon {i} is not running")
        proc.send_signal(sig)
        if sig == signal.SIGKILL:
            proc.wait(10)

    def stop_all(self):
        for proc in self.procs + [self.zk]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait(10)


def serve(cluster):
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "quit":
                break
            if words[0] == "seq":
                cluster.snowflaked(["seq", *words[1:], "--config", cluster.configs[0]])
            elif words[0] == "cli":
                cluster.snowflaked([*words[1:], "--config", cluster.configs[0]])
            elif words[0] == "ready" and len(words) == 1:
                for i in range(len(cluster.procs)):
                    poll(f"daemon {i} ready", lambda i=i: cluster.ready(i), 30)
            elif words[0] in ("zkstop", "zkcont") and len(words) == 1:
                cluster.zk.send_signal(signal.SIGSTOP if words[0] == "zkstop" else signal.SIGCONT)
            elif words[0] in ("kill", "stop", "cont", "start") and len(words) == 2:
                i = int(words[1])
                if not 0 <= i < len(cluster.procs):
                    raise RuntimeError(f"no daemon {i}")
                if words[0] == "start":
                    cluster.start(i)
                else:
                    cluster.signal(i, {"kill": signal.SIGKILL, "stop": signal.SIGSTOP,
                                       "cont": signal.SIGCONT}[words[0]])
            else:
                raise RuntimeError(f"unknown command: {line.strip()}")
            print("ok", flush=True)
        except (RuntimeError, ValueError, subprocess.SubprocessError, OSError) as e:
            print(f"error: {e}".replace("\n", " "), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("SNOWFLAKED_BIN", "snowflaked"))
    parser.add_argument("--daemons", type=int, default=2)
    parser.add_argument("--tls", action="store_true")
    args = parser.parse_args()
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    work = tempfile.mkdtemp(prefix="snowflaked-clients-")
    cluster = Cluster(args.binary, args.daemons, args.tls, work)
    try:
        cluster.start_zookeeper()
        for i in range(args.daemons):
            cluster.start(i)
        print(json.dumps({"servers": [cluster.url(i) for i in range(args.daemons)],
                          "cacert": cluster.certs["ca.crt"] if cluster.certs else None,
                          "zookeeper": f"127.0.0.1:{cluster.zk_port}",
                          "pids": [p.pid for p in cluster.procs]}), flush=True)
        serve(cluster)
    except Exception as e:  # said on the first line, where the test reads
        print(json.dumps({"error": str(e), "work": work}), flush=True)
        raise
    finally:
        cluster.stop_all()
        if not os.environ.get("SNOWFLAKED_KEEP_CLUSTER"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
