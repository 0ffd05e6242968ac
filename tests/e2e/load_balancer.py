#!/usr/bin/python3
"""Replicas behind a real load balancer, as a Kubernetes Service puts them:
HAProxy (Debian's) with active health checks on /ready, no retry of a
refused connection elsewhere (a Service has none), and replicas of the real
snowflaked (recycle mode) against a real ZooKeeper. Two promises, each under
a steady load of clients with keep-alive connections to the balancer:

1. A rollout refuses nothing. Each old replica is replaced as a Deployment
   does it (a new one started and found ready, then SIGTERM to an old one):
   /ready says 503 at once, the balancer takes the replica out while it
   still answers (http.shutdown_delay_ms), and only then does it stop
   accepting. Every request through the balancer is answered 200, and no ID
   twice. (With --shutdown-delay-ms 0 the clients meet the balancer's 503s
   for a refused connection: what every rollout did before.)
2. Sequences stay reachable in an outage. A second backend probes
   /ready?for=seq. ZooKeeper is stopped past the lease: the ID backend has
   no replica left (every /ready 503), while GET /seq through the sequence
   backend is still answered from the replicas' buffers, no number twice.

Usage: load_balancer.py SNOWFLAKED [--shutdown-delay-ms MS]"""

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from snowflaked_daemon import Daemon  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402

SLOTS = 6  # server slots per backend: the replicas and their replacements
CHECK_MS = 100  # the balancer's probe interval (a readiness probe's period)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deadline_loop(seconds, what):
    """Yields until the caller breaks out; fails the test after SECONDS."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        yield
        time.sleep(0.02)
    sys.exit(f"load_balancer: {what} within {seconds} s")


class Balancer:
    """HAProxy in the foreground; its server slots set over its runtime API."""

    def __init__(self, work):
        self.ids_port, self.seq_port = free_port(), free_port()
        self.socket_path = os.path.join(work, "haproxy.sock")
        config = os.path.join(work, "haproxy.cfg")
        backend = """
backend {name}
  option httpchk GET {probe}
  http-check expect status 200
  default-server inter {check}ms fall 2 rise 1
  server-template r 1-{slots} 127.0.0.1:9 check disabled
"""
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"""global
  stats socket {self.socket_path} mode 600 level admin
  maxconn 4000
defaults
  mode http
  timeout connect 2s
  timeout check 1s
  timeout client 30s
  timeout server 30s
  # A refused connection is a failed request, as through a Service.
  retries 0
frontend ids
  bind 127.0.0.1:{self.ids_port}
  default_backend ids
frontend seqs
  bind 127.0.0.1:{self.seq_port}
  default_backend seqs
""")
            f.write(backend.format(name="ids", probe="/ready", check=CHECK_MS, slots=SLOTS))
            f.write(backend.format(name="seqs", probe="/ready?for=seq", check=CHECK_MS,
                                   slots=SLOTS))
        subprocess.run(["haproxy", "-c", "-q", "-f", config], check=True)
        self.log = open(os.path.join(work, "haproxy.log"), "w", encoding="utf-8")
        self.process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "haproxy", "-db", "-f", config],
            stdout=self.log, stderr=self.log)
        for _ in deadline_loop(10, "HAProxy did not open its runtime API"):
            if os.path.exists(self.socket_path):
                break

    def command(self, line):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.socket_path)
            s.sendall(line.encode() + b"\n")
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        return out.decode()

    def put(self, slot, port):
        """A replica's address in slot SLOT of both backends, checked from now on."""
        for backend in ("ids", "seqs"):
            self.command(f"set server {backend}/r{slot} addr 127.0.0.1 port {port}")
            self.command(f"set server {backend}/r{slot} state ready")

    def remove(self, slot):
        for backend in ("ids", "seqs"):
            self.command(f"set server {backend}/r{slot} state maint")

    def up(self, backend):
        """The slots of BACKEND the balancer sends requests to."""
        up = set()
        for line in self.command(f"show servers state {backend}").splitlines()[2:]:
            fields = line.split()
            # srv_op_state 2: running; srv_admin_state without 0x1 or 0x2:
            # not put in maintenance (0x4 stays from `disabled` in the config)
            if len(fields) > 6 and fields[5] == "2" and not int(fields[6]) & 0x3:
                up.add(int(fields[3][1:]))
        return up

    def stop(self):
        self.process.kill()
        self.process.wait(10)


class Load:
    """CLIENTS threads, each a keep-alive connection to PORT asking for PATH
    as fast as it is answered. Counts answers; any status but 200, or a
    connection the balancer drops, is a failure."""

    def __init__(self, port, path, key, clients=4):
        self.port, self.path, self.key = port, path, key
        self.values, self.failures, self.answered = [], [], 0
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self.stop_flag.is_set():
            try:
                conn.request("GET", self.path)
                r = conn.getresponse()
                body = r.read()
                with self.lock:
                    self.answered += 1
                    if r.status == 200:
                        self.values.append(int(json.loads(body)[self.key]))
                    else:
                        self.failures.append(f"{r.status} {body[:160]!r}")
                if r.getheader("connection", "").lower() == "close":
                    conn.close()
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.failures.append(repr(e))
                conn.close()

    def finish(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(30)

    def report(self, what):
        """Prints what the clients met; true if every request got a number, none twice."""
        twice = len(self.values) - len(set(self.values))
        print(f"load_balancer: {what}: {self.answered} requests, {len(self.failures)} failed, "
              f"{twice} numbers twice")
        if self.failures:
            print("  first failures:", self.failures[:5])
        return not self.failures and twice == 0 and bool(self.values)


def ready(port, probe):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", probe)
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False


def start_replica(binary, work, zk, delay_ms, name):
    """A replica, once ready for both kinds (as a pod joins its Service's
    endpoints only once its readiness probe passes)."""
    replica = Daemon(binary, replica_config(zk, delay_ms), work, name)
    for _ in deadline_loop(30, f"{name} never became ready"):
        if ready(replica.port, "/ready") and ready(replica.port, "/ready?for=seq"):
            return replica


def replica_config(zk, delay_ms):
    return {"service": "lb",
            "coordinator": {"type": "recycle", "heartbeat_interval_ms": 500,
                            "lease_timeout_ms": 3000, "safety_margin_ms": 500,
                            "reclaim_after_ms": 6000},
            "zookeeper": {"hosts": zk.hosts, "session_timeout_ms": 2000,
                          "connect_timeout_ms": 2000},
            "sequences": {"enabled": True},
            "http": {"io_threads": 1, "shutdown_delay_ms": delay_ms},
            "log_level": "info"}


def rollout(binary, work, zk, balancer, delay_ms):
    replicas = {}
    for slot in (1, 2, 3):
        replicas[slot] = start_replica(binary, work, zk, delay_ms, f"old{slot}")
        balancer.put(slot, replicas[slot].port)
    for _ in deadline_loop(30, "the first replicas were not all up"):
        if balancer.up("ids") == {1, 2, 3}:
            break
    ids = Load(balancer.ids_port, "/id/roll", "id")
    seqs = Load(balancer.seq_port, "/seq/roll", "id")
    for _ in deadline_loop(20, "no load went through"):
        if ids.answered > 200 and seqs.answered > 200:
            break
    started = time.monotonic()
    # maxSurge 1, maxUnavailable 0: a new one ready, then an old one stopped.
    for old, new in ((1, 4), (2, 5), (3, 6)):
        replicas[new] = start_replica(binary, work, zk, delay_ms, f"new{new}")
        balancer.put(new, replicas[new].port)
        for _ in deadline_loop(30, f"replica {new} never came up"):
            if new in balancer.up("ids") and new in balancer.up("seqs"):
                break
        replicas[old].process.send_signal(signal.SIGTERM)
        code = replicas[old].process.wait(30)
        if code != 0:
            sys.exit(f"load_balancer: replica {old} exited {code}")
        balancer.remove(old)  # the endpoint is gone with its pod
    took = time.monotonic() - started
    ids.finish()
    seqs.finish()
    rolled = [load.report(f"rollout of 3 replicas in {took:.1f} s, shutdown_delay_ms {delay_ms}: "
                          f"{name} through the balancer")
              for name, load in (("GET /id", ids), ("GET /seq", seqs))]
    return replicas, all(rolled)


def outage(zk, balancer):
    """ZooKeeper stopped past the lease: IDs have no replica, sequences do."""
    zk.pause()
    try:
        for _ in deadline_loop(30, "the ID backend kept a replica past the lease"):
            if not balancer.up("ids"):
                break
        seqs = Load(balancer.seq_port, "/seq/roll", "id")
        for _ in deadline_loop(20, "no sequence number came through in the outage"):
            if seqs.answered > 500:
                break
        seqs.finish()
        conn = http.client.HTTPConnection("127.0.0.1", balancer.ids_port, timeout=10)
        conn.request("GET", "/id/roll")
        id_status = conn.getresponse().status
        up = balancer.up("seqs")
    finally:
        zk.resume()
    served = seqs.report(f"ZooKeeper stopped past the lease: GET /id through the balancer "
                         f"{id_status} (no replica ready for IDs); GET /seq from {len(up)} "
                         f"replica(s)")
    if len(up) != 3:
        print(f"load_balancer: {len(up)} replica(s) ready for sequences in the outage, not 3")
    return id_status == 503 and served and len(up) == 3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--shutdown-delay-ms", type=int, default=2000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work)
        balancer = Balancer(work)
        replicas = {}
        try:
            subprocess.run([a.snowflaked, "cluster", "create", "--config",
                            write_admin_config(work, zk)], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([a.snowflaked, "seq", "create", "roll", "--start", "1", "--config",
                            os.path.join(work, "admin.json")], check=True,
                           stdout=subprocess.DEVNULL)
            replicas, rolled = rollout(a.snowflaked, work, zk, balancer, a.shutdown_delay_ms)
            served = outage(zk, balancer)
        finally:
            for r in replicas.values():
                if r.process.poll() is None:
                    r.process.kill()
                    r.process.wait(10)
            balancer.stop()
            zk.stop()
        if not (rolled and served):
            sys.exit(1)


def write_admin_config(work, zk):
    """The config the operator commands use (cluster create, seq create)."""
    path = os.path.join(work, "admin.json")
    config = replica_config(zk, 0)
    config["coordinator"]["state_dir"] = os.path.join(work, "admin-state")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    return path


if __name__ == "__main__":
    main()
