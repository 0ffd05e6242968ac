#!/usr/bin/python3
"""What ZooKeeper pays for N daemons (docs/CONTRIBUTING.md gives the last
run), measured as an operator would see it: ZooKeeper's own `mntr`
counters, real servers, real daemons.

For each N: a fresh ZooKeeper (standalone, or a 3-node ensemble with
--ensemble; maxClientCnxns=0 since every daemon here shares one address),
`snowflaked cluster create`, then N real recycle daemons (pool of 1024, one
io thread each, ports the system picks) started at once. Printed per N:

  ready s           from the first start to the last daemon's /ready 200
  start pkts/d      packets ZooKeeper received during the start, per daemon
  start writes/d    transactions it committed then (its zxid; sessions
                    included), per daemon
  rest pkts/d/s     packets received per daemon per second at rest, measured
                    over --idle-seconds once every daemon has beaten twice
  rest pkts/d/beat  the same per heartbeat interval
  conns/d           client connections per daemon (ZooKeeper sessions)

and from each daemon's own snowflake_zookeeper_requests_total (requests it
sent, pings not counted), which no other daemon's heartbeats blur:

  start req/d       requests a daemon had sent when it turned ready: the
                    mean over the daemons, and the largest
  rest req/d/beat   requests per daemon per heartbeat at rest (the reaper's
                    listings included, spread over all)

Usage: scale.py SNOWFLAKED N [N ...] [--ensemble] [--heartbeat-ms MS] [--idle-seconds S]
                [--tick-ms MS]
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import host_state  # noqa: E402,F401  (never the host's state directory)
import zookeeper_server  # noqa: E402


def config(zk, heartbeat_ms, state_dir):
    # Short timings, in the proportions of conf/recycle.json, so that the
    # rest is measured over many heartbeats.
    return {"service": "scale",
            "coordinator": {"type": "recycle", "state_dir": state_dir,
                            "heartbeat_interval_ms": heartbeat_ms,
                            "lease_timeout_ms": 3 * heartbeat_ms,
                            "reclaim_after_ms": 5 * heartbeat_ms,
                            "safety_margin_ms": heartbeat_ms, "max_boot_wait_ms": 5000},
            "zookeeper": {"hosts": zk.hosts, "root": "/snowflake/scale",
                          "session_timeout_ms": 10000, "connect_timeout_ms": 30000},
            "http": {"io_threads": 1}, "log_level": "warn"}


def daemon_metric(port, name):
    """A counter off the daemon's /metrics, or None if it cannot be read."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except (urllib.error.URLError, OSError):
        pass
    return None


def ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Fleet:
    """N daemons started at once, each on a port of its own."""

    def __init__(self, binary, zk, n, heartbeat_ms, work):
        self.binary = binary
        self.processes = []
        self.logs = []
        self.configs = []
        for i in range(n):
            path = os.path.join(work, f"d{i}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(config(zk, heartbeat_ms, os.path.join(work, f"d{i}-state")), f)
            self.configs.append(path)
            if i == 0:
                subprocess.run([binary, "cluster", "create", "--config", path, "--wait", "30000"],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.logs.append(os.path.join(work, f"d{i}.log"))

    def start(self):
        n = len(self.logs)
        # Ports picked here (all bound at once, so all distinct), not read
        # from each log: at log level warn the daemons print nothing.
        sockets = [socket.socket() for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        self.ports = [s.getsockname()[1] for s in sockets]
        for s in sockets:
            s.close()
        self.started = time.monotonic()
        for i in range(n):
            with open(self.logs[i], "w", encoding="utf-8") as log:
                self.processes.append(subprocess.Popen(
                    ["setpriv", "--pdeathsig", "KILL", "--", self.binary, "--config",
                     self.configs[i], "--listen", f"127.0.0.1:{self.ports[i]}"],
                    stdout=log, stderr=log))

    def all_ready(self, limit):
        """Seconds from the start to the last /ready 200, or None past `limit`."""
        waiting = set(range(len(self.processes)))
        self.start_requests = {}
        deadline = self.started + limit
        while waiting and time.monotonic() < deadline:
            for i in sorted(waiting):
                if self.processes[i].poll() is not None:
                    sys.exit(f"scale: daemon {i} exited: see {self.logs[i]}")
                if ready(self.ports[i]):
                    waiting.discard(i)
                    self.start_requests[i] = daemon_metric(
                        self.ports[i], "snowflake_zookeeper_requests_total")
            if waiting:
                time.sleep(0.05)
        return None if waiting else time.monotonic() - self.started

    def requests(self):
        """Every daemon's requests sent so far, summed."""
        return sum(daemon_metric(p, "snowflake_zookeeper_requests_total") or 0
                   for p in self.ports)

    def heartbeats(self):
        return sum(daemon_metric(p, "snowflake_heartbeats_total") or 0 for p in self.ports)

    def stop(self):
        for p in self.processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        for p in self.processes:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def delta(a, b, name):
    return b.get(name, 0) - a.get(name, 0)


def measure(binary, n, heartbeat_ms, idle_s, ensemble=False, tick_ms=100):
    with tempfile.TemporaryDirectory(prefix="snowflake-scale-") as work:
        extra = "maxClientCnxns=0\n"
        zk = (zookeeper_server.ZooKeeperEnsemble(work, extra=extra, tick_ms=tick_ms) if ensemble
              else zookeeper_server.ZooKeeperServer(work, "zk", extra=extra, tick_ms=tick_ms))
        askers = 3 if ensemble else 1  # the connections mntr itself makes
        fleet = None
        try:
            deadline = time.monotonic() + 30
            while zk.zxid() is None:  # up, but not serving requests yet
                if time.monotonic() > deadline:
                    sys.exit("scale: ZooKeeper did not serve requests within 30 s")
                time.sleep(0.05)
            fleet = Fleet(binary, zk, n, heartbeat_ms, work)  # the cluster created
            before = zk.mntr()
            zxid_before = zk.zxid()
            fleet.start()
            took = fleet.all_ready(limit=60 + n)
            if took is None:
                sys.exit(f"scale: {n} daemons were not all ready within {60 + n} s")
            started = zk.mntr()
            zxid_started = zk.zxid()
            time.sleep(2 * heartbeat_ms / 1000)  # every daemon has beaten since
            rest_from = zk.mntr()
            requests_from, beats_from = fleet.requests(), fleet.heartbeats()
            time.sleep(idle_s)
            rest_to = zk.mntr()
            requests_to, beats_to = fleet.requests(), fleet.heartbeats()
            start_requests = [v for v in fleet.start_requests.values() if v is not None]
            return {
                "n": n, "ready_s": took,
                "start_packets": delta(before, started, "zk_packets_received") / n,
                "start_writes": (zxid_started - zxid_before) / n,
                "rest_packets_s": delta(rest_from, rest_to, "zk_packets_received") / n / idle_s,
                "connections": (rest_to.get("zk_num_alive_connections", askers) - askers) / n,
                "start_requests": sum(start_requests) / max(1, len(start_requests)),
                "start_requests_max": max(start_requests, default=0),
                "rest_requests_beat": (requests_to - requests_from) / max(1, beats_to - beats_from),
            }
        finally:
            if fleet:
                fleet.stop()
            zk.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("snowflaked")
    parser.add_argument("n", type=int, nargs="+")
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--ensemble", action="store_true")
    parser.add_argument("--tick-ms", type=int, default=100)
    args = parser.parse_args()
    beat_s = args.heartbeat_ms / 1000
    print(f"recycle daemons started at once against one "
          f"{'3-node ensemble' if args.ensemble else 'standalone ZooKeeper'}, pool 1024, "
          f"heartbeat {args.heartbeat_ms} ms, tickTime {args.tick_ms} ms; ZooKeeper's mntr "
          f"counters{' summed over the members' if args.ensemble else ''}:")
    print(f"{'daemons':>8} {'ready s':>8} {'start pkts/d':>13} {'start writes/d':>15} "
          f"{'rest pkts/d/s':>14} {'rest pkts/d/beat':>17} {'conns/d':>8} "
          f"{'start req/d (max)':>18} {'rest req/d/beat':>16}")
    for n in args.n:
        r = measure(args.snowflaked, n, args.heartbeat_ms, args.idle_seconds, args.ensemble,
                    args.tick_ms)
        print(f"{r['n']:>8} {r['ready_s']:>8.1f} {r['start_packets']:>13.1f} "
              f"{r['start_writes']:>15.1f} {r['rest_packets_s']:>14.1f} "
              f"{r['rest_packets_s'] * beat_s:>17.1f} {r['connections']:>8.2f} "
              f"{r['start_requests']:>11.1f} ({r['start_requests_max']:>4.0f}) "
              f"{r['rest_requests_beat']:>16.2f}", flush=True)


if __name__ == "__main__":
    main()
