#!/usr/bin/python3
"""How long a daemon with the default `sequences` config serves a tag
through a ZooKeeper outage, measured: the real snowflaked (recycle mode) and
a real ZooKeeper (tests/support/zookeeper_server.py), a steady load of RATE
requests a second on GET /seq/<tag> for WARMUP seconds, then ZooKeeper
stopped (SIGSTOP: it answers nothing) while the load goes on, until the
first request that is not answered with a number, or MAX seconds. Prints the
buffer /status predicted at the outage's start, the time served, and the
numbers handed out meanwhile (none twice, each above the last).

A range is sized to last `segment_duration_s` (900 s) at the measured rate
and the next is fetched once a tenth is used, so a daemon holds 13.5 to 28.5
minutes of its rate: the figure depends on where in its range the outage
falls, not on the rate.

Usage: seq_outage.py SNOWFLAKED [--rate N] [--warmup S] [--max S]"""

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time

from bench_daemon import BenchDaemon, ZooKeeperServer


class Load:
    """RATE requests a second on one keep-alive connection, paced."""

    def __init__(self, port, tag, rate):
        self.port, self.tag, self.rate = port, tag, rate
        self.numbers = []
        self.failed_at = None  # monotonic time of the first request not answered with a number
        self.failure = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        period = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stop.is_set() and self.failed_at is None:
            try:
                conn.request("GET", f"/seq/{self.tag}")
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    self.failed_at, self.failure = time.monotonic(), f"{r.status} {body[:200]!r}"
                    break
                self.numbers.append(int(json.loads(body)["id"]))
            except (OSError, http.client.HTTPException) as e:
                self.failed_at, self.failure = time.monotonic(), repr(e)
                break
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--rate", type=float, default=200)
    p.add_argument("--warmup", type=float, default=120)
    p.add_argument("--max", type=float, default=3600)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work)
        # The defaults, but for where things are; sequences as shipped.
        daemon = BenchDaemon(a.snowflaked, work, {"service": "outage",
                                                  "coordinator": {"type": "recycle"},
                                                  "zookeeper": {"hosts": zk.hosts}})
        try:
            daemon.create_tag("order")
            daemon.wait_until(lambda: daemon.get_json("/seq/order").get("id"),
                              "the daemon never served /seq/order")
            load = Load(daemon.port, "order", a.rate)
            time.sleep(a.warmup)
            status = daemon.get_json("/status")["sequences"]["tags"]["order"]
            before = len(load.numbers)
            zk.pause()
            started = time.monotonic()
            print(f"seq_outage: {a.rate:.0f} requests/s for {a.warmup:.0f} s; ZooKeeper stopped with "
                  f"{status['left']} numbers buffered, {status['seconds_left']} s at "
                  f"{status['rate']:.1f}/s by /status", flush=True)
            while load.failed_at is None and time.monotonic() - started < a.max:
                time.sleep(1)
            ended = load.failed_at or time.monotonic()
            load.stop.set()
            load.thread.join()
            served = ended - started
            during = load.numbers[before:]
            increasing = all(x < y for x, y in zip(load.numbers, load.numbers[1:]))
            print(f"seq_outage: served {served:.0f} s ({served / 60:.1f} min) of the outage, "
                  f"{len(during)} numbers, each above the last: {increasing}; "
                  f"then: {load.failure or 'still serving at --max'}")
            zk.resume()
            if not increasing:
                sys.exit(1)
        finally:
            daemon.stop()
            zk.stop()


if __name__ == "__main__":
    main()
