#!/usr/bin/python3
"""Strict sequences (`seq create --order strict`), in one run: two real
snowflaked daemons (recycle mode, short leases) beside a real ZooKeeper
(tests/support/zookeeper_server.py).

1. Throughput on the owner: wrk on GET /seq of a per-daemon tag and of a
   strict tag, on the daemon that owns the strict one, ROUNDS rounds
   alternating (medians). Goal: strict >= 0.95x per-daemon.
2. Through the other daemon (the request passed on to the owner over a
   kept-alive connection, its answer passed back): its req/s and p99.
3. A clean stop of the owner (SIGTERM) while a client asks the other
   daemon: requests refused (goal: none) and the longest answer.
4. kill -9 of the owner while a client asks the survivor: the time from the
   kill to the first number handed out again (the takeover waits
   coordinator.reclaim_after_ms after the owner's last heartbeat; set short
   here), and the requests refused meanwhile.

Usage: seq_strict.py SNOWFLAKED [--connections N] [--seconds S] [--rounds R]"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from snowflaked_daemon import Daemon  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402
from seq_dry import figures, wrk  # noqa: E402

RECLAIM_AFTER_MS = 6000


def config(zk):
    return {"service": "bench", "log_level": "info",
            "coordinator": {"type": "recycle", "persist_interval_ms": 100,
                            "heartbeat_interval_ms": 300, "lease_timeout_ms": 4000,
                            "reclaim_after_ms": RECLAIM_AFTER_MS, "safety_margin_ms": 1000,
                            "max_boot_wait_ms": 5000},
            "zookeeper": {"hosts": zk.hosts, "session_timeout_ms": 2000,
                          "connect_timeout_ms": 2000},
            "sequences": {"enabled": True},
            "http": {"io_threads": 1}}


def get(port, path, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def wait_for(what, check, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            found = check()
            if found:
                return found
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"seq_strict: {what} within {seconds} s")


def owned_here(port, tag):
    status = json.loads(get(port, "/status")[1])
    return status["sequences"]["tags"].get(tag, {}).get("owned_here") is True


class Asker:
    """One client asking PORT for /seq/TAG over a kept-alive connection, as
    fast as answers come, until stopped: each answer's status and time."""

    def __init__(self, port, tag):
        self.port, self.tag = port, tag
        self.answers = []  # (sent, received, status, number or None)
        self.stopping = False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        conn = None
        while not self.stopping:
            sent = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("GET", f"/seq/{self.tag}")
                r = conn.getresponse()
                body = r.read()
                number = int(json.loads(body)["id"]) if r.status == 200 else None
                self.answers.append((sent, time.monotonic(), r.status, number))
            except OSError:
                self.answers.append((sent, time.monotonic(), 0, None))
                conn = None

    def stop(self):
        self.stopping = True
        self.thread.join()


def through_handover(port, end_owner, serving, seconds):
    """A client of PORT all along while END_OWNER() ends the owner: once a
    number came after it and SERVING() holds, what handover() says of it."""
    asker = Asker(port, "chat")
    wait_for("no answer before the owner's end", lambda: len(asker.answers) > 50)
    since = time.monotonic()
    end_owner()
    wait_for("no number after the owner's end", lambda: any(
        x[0] > since and x[2] == 200 for x in asker.answers[-5:]) and serving(), seconds)
    asker.stop()
    return handover(asker, since)


def handover(asker, since):
    """Refused answers after SINCE, the longest answer, the longest time
    without a number, and whether the numbers rose throughout."""
    after = [a for a in asker.answers if a[1] >= since]
    refused = sum(1 for a in after if a[2] != 200)
    longest = max((a[1] - a[0] for a in after), default=0.0)
    served = [since] + [a[1] for a in after if a[2] == 200]
    gap = max((b - a for a, b in zip(served, served[1:])), default=float("nan"))
    numbers = [a[3] for a in asker.answers if a[3] is not None]
    rising = all(x < y for x, y in zip(numbers, numbers[1:]))
    return refused, longest, gap, len(after), rising


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        zk = ZooKeeperServer(work)
        daemons = []
        try:
            daemons = [Daemon(a.snowflaked, config(zk), work, name) for name in ("a", "b")]
            for d in daemons:
                wait_for("a daemon never ready", lambda d=d: get(d.port, "/ready")[0] == 200)
            for args in (["per", "--start", "1"], ["chat", "--order", "strict"]):
                subprocess.run([a.snowflaked, "seq", "create", *args, "--config",
                                daemons[0].config_path], check=True, stdout=subprocess.DEVNULL)
            owner = wait_for("nobody owned the strict tag", lambda: next(
                (d for d in daemons if owned_here(d.port, "chat")), None))
            other = next(d for d in daemons if d is not owner)
            urls = {"per": f"http://127.0.0.1:{owner.port}/seq/per",
                    "strict": f"http://127.0.0.1:{owner.port}/seq/chat",
                    "forwarded": f"http://127.0.0.1:{other.port}/seq/chat"}
            for url in urls.values():
                wrk(url, a.connections, 2, latency=False).communicate()  # warm-up
            runs = {k: [] for k in urls}
            for _ in range(a.rounds):
                for k, url in urls.items():
                    runs[k].append(figures(wrk(url, a.connections, a.seconds).communicate()[0]))
            non2xx = {k: sum(r[3] for r in v) for k, v in runs.items()}
            med = {k: (statistics.median(r[2] for r in v), statistics.median(r[1] for r in v))
                   for k, v in runs.items()}

            # 3. A clean stop of the owner, a client of the other all along
            # (until the other hands the tag out itself).
            def stop_owner():
                owner.process.terminate()
                owner.process.wait(30)
            clean = through_handover(other.port, stop_owner,
                                     lambda: owned_here(other.port, "chat"), 30)

            # 4. kill -9 of the owner (now the other), a fresh daemon's client.
            survivor = Daemon(a.snowflaked, config(zk), work, "c")
            daemons.append(survivor)
            wait_for("the new daemon never ready", lambda: get(survivor.port, "/ready")[0] == 200)
            wait_for("the new daemon never served", lambda: get(survivor.port, "/seq/chat")[0] == 200)
            def kill_owner():
                other.process.kill()
                other.process.wait(30)
            killed = through_handover(survivor.port, kill_owner, lambda: True, 60)
        finally:
            for d in daemons:
                if d.process.poll() is None:
                    d.stop()
            zk.stop()
    per, strict, fwd = med["per"], med["strict"], med["forwarded"]
    print(f"seq_strict: {a.rounds} rounds of {a.seconds} s, wrk -c{a.connections}, one I/O thread "
          "each, medians:")
    print(f"  per-daemon /seq on the owner: {per[0]:.0f} req/s, p99 {per[1]:.3f} ms")
    print(f"  strict /seq on its owner:     {strict[0]:.0f} req/s, p99 {strict[1]:.3f} ms; "
          f"ratio to per-daemon {strict[0] / per[0]:.3f} (goal >= 0.95)")
    print(f"  strict /seq through the other daemon (passed on): {fwd[0]:.0f} req/s, "
          f"p99 {fwd[1]:.3f} ms; ratio to the owner's {fwd[0] / strict[0]:.3f}")
    print(f"  non-2xx answers: {non2xx}")
    print(f"clean stop of the owner, a client of the other daemon: {clean[0]} of {clean[3]} "
          f"requests refused (goal 0), longest answer {clean[1] * 1000:.0f} ms, longest time "
          f"without a number {clean[2] * 1000:.0f} ms, numbers rising: {clean[4]}")
    print(f"kill -9 of the owner (coordinator.reclaim_after_ms {RECLAIM_AFTER_MS}), a client of "
          f"the survivor: no number for {killed[2]:.2f} s, {killed[0]} of {killed[3]} requests "
          f"refused meanwhile, numbers rising: {killed[4]}")
    if any(non2xx.values()) or not clean[4] or not killed[4]:
        sys.exit("seq_strict: refusals under load, or numbers out of order")


if __name__ == "__main__":
    main()
