#!/usr/bin/python3
"""Whether requests for a dry sequence hold up everything else, measured:
the real snowflaked (static worker ID, sequences on) and a real ZooKeeper
(tests/support/zookeeper_server.py), GET /id latency measured by wrk alone,
then again while CONNECTIONS clients hammer GET /seq/<tag> of a tag with
nothing buffered and no range to come: ZooKeeper stopped (SIGSTOP), but
within its session timeout, so the daemon still counts it connected and
each such request waits up to `sequences.max_wait_ms` for a range.

A wait that blocks its event loop stalls every connection on that loop, IDs
included, for up to max_wait_ms; a wait on a timer costs the loop nothing.
Prints /id's p50 and p99 both ways, the ratio, and what the hammered tag
answered (a 503 sequence_unavailable each, after its wait).

Usage: seq_dry.py SNOWFLAKED [--connections N] [--seconds S] [--max-wait MS]"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time

from bench_daemon import BenchDaemon, ZooKeeperServer

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def wrk(url, connections, seconds, latency=True):
    args = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s"]
    if latency:
        args.append("--latency")
    return subprocess.Popen(args + [url], stdout=subprocess.PIPE, text=True)


def figures(out):
    """p50 and p99 in ms, requests a second, and non-2xx answers, from wrk's report."""
    def pct(p):
        m = re.search(rf"^\s*{p}%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M)
        return float(m.group(1)) * UNITS[m.group(2)] if m else float("nan")
    rate = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return (pct(50), pct(99), float(rate.group(1)) if rate else 0.0,
            int(non2xx.group(1)) if non2xx else 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--max-wait", type=int, default=1000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work)
        daemon = BenchDaemon(a.snowflaked, work, {
            "service": "dry",
            "coordinator": {"type": "static", "static_worker_id": 7},
            # Long enough that the stopped ZooKeeper still counts as
            # connected for the whole measurement.
            "zookeeper": {"hosts": zk.hosts, "session_timeout_ms": 40000},
            "sequences": {"enabled": True, "max_wait_ms": a.max_wait}})
        try:
            daemon.create_tag("dry")

            def listed():
                status, body = daemon.get("/status")
                seq = json.loads(body)["sequences"] if status == 200 else None
                return seq and seq["zookeeper"] == "connected" and "dry" in seq["tags"]
            daemon.wait_until(listed, "the daemon never listed the tag")
            ids = daemon.url("/id/order")
            wrk(ids, 8, 2, latency=False).communicate()  # warm-up
            alone = figures(wrk(ids, 8, a.seconds).communicate()[0])

            zk.pause()  # no range comes; the session does not end for a while
            hammer = wrk(daemon.url("/seq/dry"), a.connections, a.seconds + 2)
            time.sleep(1)  # every hammering connection is waiting by now
            during = figures(wrk(ids, 8, a.seconds).communicate()[0])
            dry = figures(hammer.communicate()[0])
            try:  # a loop that blocks in its waits answers late
                status = daemon.get_json("/status", timeout=120)
                connected = status["sequences"]["zookeeper"] == "connected"
            except OSError:
                connected = False
            zk.resume()

            def described(f):
                if f[2] == 0:
                    return f"none answered within {a.seconds} s"
                return f"p50 {f[0]:.3f} ms, p99 {f[1]:.3f} ms, {f[2]:.0f} req/s"
            print(f"seq_dry: GET /id alone: {described(alone)}")
            print(f"seq_dry: GET /id while {a.connections} connections ask for a dry tag (each "
                  f"waits up to {a.max_wait} ms): {described(during)}")
            ratio = during[1] / alone[1] if during[2] > 0 else float("inf")
            print(f"seq_dry: p99 ratio (hammered / alone): {ratio:.2f}; the dry tag answered "
                  f"{dry[3]} refusals at {dry[2]:.1f} req/s (p50 {dry[0]:.0f} ms); ZooKeeper "
                  f"still counted connected at the end: {connected}")
            if during[2] > 0 and not connected:
                sys.exit("seq_dry: the session ended during the run: the waits were not measured")
        finally:
            daemon.stop(kill=True)  # a loop stuck in waits would drain for long
            zk.stop()


if __name__ == "__main__":
    main()
