#!/usr/bin/python3
"""GET /seq of a sequence that restarts each day, its latency steady and
across a local midnight, in one run: the real snowflaked (static worker ID,
sequences on) and a real ZooKeeper (tests/support/zookeeper_server.py), both
with their wall clocks set by libfaketime to some seconds before midnight
in Berlin at the end of the 25-hour day (2026-10-25, 23:00 UTC). wrk
measures SECONDS of load well before the boundary (steady), then SECONDS
with the boundary in the middle; between the two the daemon has made the
next day's node and taken its first range, as it does 30 to 120 s before
midnight, so at the boundary no request should wait for ZooKeeper.

Prints both p50 and p99, the ratio of the p99s (goal: at most 2), the
non-2xx answers (none: a day has a billion numbers, 'INV-{yyyy}{MM}{dd}-{n:09}'),
and the first answer of the new day.

Usage: seq_period.py SNOWFLAKED [--connections N] [--seconds S]"""

import argparse
import calendar
import json
import subprocess
import sys
import tempfile
import time

from bench_daemon import BenchDaemon, ZooKeeperServer
from seq_dry import figures, wrk

BOUNDARY = calendar.timegm((2026, 10, 25, 23, 0, 0))  # 2026-10-26 00:00 in Berlin
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def clock_env(offset_s, jvm=False):
    """A wall clock OFFSET_S seconds from ours (monotonic clocks left real)."""
    env = {"LD_PRELOAD": FAKETIME, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
           "FAKETIME": f"{offset_s:+d}"}
    if jvm:  # libfaketime's fix of monotonic timed waits makes a JVM spin
        env["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
    return env


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--seconds", type=int, default=10)
    a = p.parse_args()
    lead = 3 * a.seconds + 20  # start, warm-up, the steady run, then the wait
    offset = BOUNDARY - lead - int(time.time())
    boundary_real = time.monotonic() + lead
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work, env=clock_env(offset, jvm=True))
        daemon = BenchDaemon(a.snowflaked, work, {
            "service": "period",
            "coordinator": {"type": "static", "static_worker_id": 7},
            "zookeeper": {"hosts": zk.hosts},
            "sequences": {"enabled": True}}, env=clock_env(offset))
        try:
            subprocess.run([a.snowflaked, "seq", "create", "invoice", "--reset", "daily",
                            "--time-zone", "Europe/Berlin", "--template",
                            "INV-{yyyy}{MM}{dd}-{n:09}", "--config", daemon.config],
                           check=True, stdout=subprocess.DEVNULL)
            url = daemon.url("/seq/invoice")
            daemon.wait_until(lambda: daemon.get("/seq/invoice")[0] == 200,
                              "the daemon never served the tag")
            wrk(url, a.connections, 2, latency=False).communicate()  # warm-up
            steady = figures(wrk(url, a.connections, a.seconds).communicate()[0])
            start_at = boundary_real - a.seconds / 2
            if time.monotonic() > start_at:
                sys.exit("seq_period: the steady run ended after the boundary run had to start")
            time.sleep(start_at - time.monotonic())  # the boundary run's start is the point
            across = figures(wrk(url, a.connections, a.seconds).communicate()[0])
            first = daemon.get_json("/status")["sequences"]["tags"]["invoice"]
            day = json.loads(daemon.get("/seq/invoice")[1])
        finally:
            daemon.stop()
            zk.stop()
    print(f"seq_period: GET /seq/invoice steady: p50 {steady[0]:.3f} ms, p99 {steady[1]:.3f} ms, "
          f"{steady[2]:.0f} req/s, {steady[3]} non-2xx")
    print(f"seq_period: across midnight (Berlin, 2026-10-26 00:00): p50 {across[0]:.3f} ms, "
          f"p99 {across[1]:.3f} ms, {across[2]:.0f} req/s, {across[3]} non-2xx")
    print(f"seq_period: p99 ratio (across / steady): {across[1] / steady[1]:.2f} (goal <= 2); "
          f"after it the daemon is in period {first['period']} and answered {day['id']}")
    if steady[3] or across[3]:
        sys.exit("seq_period: some requests were refused: the figures are not of served numbers")


if __name__ == "__main__":
    main()
