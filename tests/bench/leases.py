#!/usr/bin/python3
"""Worker-ID leases for other processes, measured: the real snowflaked
(recycle, leases on) beside a real ZooKeeper, one holder asking over one
kept-alive connection: leases taken a second, renewed a second, and the
ZooKeeper requests each costs (snowflake_zookeeper_requests_total, the
daemon's own heartbeats and reaper passes meanwhile taken out at the rate
measured while idle), against the baseline measured in the same run: the
ZooKeeper requests of one of the daemon's own heartbeat steps (its write,
its root read and its reaper's look). A renewal should cost no more.

Usage: leases.py SNOWFLAKED [--leases N] [--idle S]"""

import argparse
import http.client
import json
import sys
import tempfile
import time

from bench_daemon import BenchDaemon, ZooKeeperServer


def metric(daemon, name):
    for line in daemon.get("/metrics")[1].decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    sys.exit(f"leases.py: no {name} in /metrics")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--leases", type=int, default=300)
    p.add_argument("--idle", type=float, default=6.0)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work)
        daemon = BenchDaemon(a.snowflaked, work, {
            "service": "leases",
            "coordinator": {"type": "recycle", "heartbeat_interval_ms": 500,
                            "lease_timeout_ms": 10000, "reclaim_after_ms": 60000,
                            "safety_margin_ms": 1000, "max_skew_ms": 500},
            "zookeeper": {"hosts": zk.hosts},
            "leases": {"enabled": True, "max_duration_ms": 10000}})
        try:
            # A new cluster nobody vouched for is fenced for a lease first.
            daemon.wait_until(lambda: daemon.get("/ready")[0] == 200, "ready", 60)
            # The baseline: the daemon's own steps, idle.
            r0, h0, t0 = (metric(daemon, "snowflake_zookeeper_requests_total"),
                          metric(daemon, "snowflake_heartbeats_total"), time.monotonic())
            time.sleep(a.idle)
            r1, h1, t1 = (metric(daemon, "snowflake_zookeeper_requests_total"),
                          metric(daemon, "snowflake_heartbeats_total"), time.monotonic())
            idle_rate = (r1 - r0) / (t1 - t0)
            per_heartbeat = (r1 - r0) / max(h1 - h0, 1)

            conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)

            def ask(method, target):
                conn.request(method, target)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    sys.exit(f"leases.py: {method} {target}: {r.status} {body[:200]!r}")
                return json.loads(body)

            def phase(calls):
                before, start = metric(daemon, "snowflake_zookeeper_requests_total"), time.monotonic()
                out = [call() for call in calls]
                took = time.monotonic() - start
                after = metric(daemon, "snowflake_zookeeper_requests_total")
                own = (after - before - idle_rate * took) / len(calls)
                return out, len(calls) / took, own

            leases, take_rate, take_cost = phase(
                [lambda i=i: ask("POST", f"/v1/leases?holder=bench-{i}&duration_ms=10000")
                 for i in range(a.leases)])
            _, renew_rate, renew_cost = phase(
                [lambda l=l: ask("PUT", f"/v1/leases/{l['worker_id']}?token={l['token']}")
                 for l in leases])
            _, give_rate, give_cost = phase(
                [lambda l=l: ask("DELETE", f"/v1/leases/{l['worker_id']}?token={l['token']}")
                 for l in leases])
            conn.close()
        finally:
            daemon.stop()
            zk.stop()
    print(f"worker-ID leases, one holder, one kept-alive connection, {a.leases} leases:")
    print(f"  taken       {take_rate:8.0f} /s   {take_cost:5.2f} ZooKeeper requests each")
    print(f"  renewed     {renew_rate:8.0f} /s   {renew_cost:5.2f} ZooKeeper requests each")
    print(f"  given back  {give_rate:8.0f} /s   {give_cost:5.2f} ZooKeeper requests each")
    print(f"baseline: a daemon's own heartbeat step, idle: {per_heartbeat:.2f} ZooKeeper requests "
          f"({idle_rate:.1f}/s)")
    print(f"goal: a renewal costs no more than a heartbeat step: {renew_cost:.2f} vs "
          f"{per_heartbeat:.2f}  {'met' if renew_cost <= per_heartbeat + 0.05 else 'NOT MET'}")


if __name__ == "__main__":
    main()
