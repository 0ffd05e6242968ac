#!/usr/bin/python3
"""What surviving ZooKeeper's own data loss costs, measured with real
servers and daemons (docs/design.md, "When ZooKeeper loses its data"):

1. First start of a new cluster, before and after, in the same run: a fresh
   ZooKeeper, then the documented first start of a recycle daemon with
   conf/recycle.json's timings, until /ready answers 200. After: this
   build, `snowflaked cluster create` first, as the first-install paths do.
   Before: BASELINE, a build of the revision before cluster identities,
   started alone. Rounds alternate; medians and the ratio. Also, for
   comparison: this build started alone (its new cluster fenced for a
   lease: not waited for, only reported).
2. The window after a restore without the runbook's command: two daemons
   serve, ZooKeeper comes back from a backup taken before they claimed, and
   a fresh daemon starts the moment it answers. How long until the daemons
   that lived through it have fenced the cluster (the root's fence, seen in
   the fresh daemon's /status), and when the fresh daemon issued its first
   ID, if it issued one before that: the window.
3. How long the daemons that lived through it refused: from the restore to
   their first ID again, and why (the fence's length).

Usage: lost_data.py SNOWFLAKED [--baseline OLD_SNOWFLAKED] [--rounds N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import snowflaked_daemon  # noqa: E402
import zookeeper_server  # noqa: E402


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
    except OSError:
        return None, None


def until(condition, limit, step=0.005):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return None


def recycle_config(zk, timings="recycle"):
    config = {"service": "bench", "coordinator": {"type": "recycle", "persist_interval_ms": 100},
              "zookeeper": {"hosts": zk.hosts, "root": "/snowflake/bench",
                            "session_timeout_ms": 10000, "connect_timeout_ms": 10000},
              "http": {"io_threads": 1}}
    if timings == "recycle":  # conf/recycle.json's
        config["coordinator"].update({"heartbeat_interval_ms": 180000, "lease_timeout_ms": 540000,
                                      "reclaim_after_ms": 900000, "safety_margin_ms": 60000,
                                      "max_skew_ms": 2000, "max_boot_wait_ms": 5000})
    else:  # short leases: the restore's fence ends within the run
        config["coordinator"].update({"heartbeat_interval_ms": 300, "lease_timeout_ms": 4000,
                                      "reclaim_after_ms": 6000, "safety_margin_ms": 1000,
                                      "max_boot_wait_ms": 5000})
        config["zookeeper"]["session_timeout_ms"] = 2000
        config["zookeeper"]["connect_timeout_ms"] = 2000
        config["layout"] = {"worker_bits": 2, "sequence_bits": 20}  # room for all three
    return config


def first_start(binary, vouch, workdir, name):
    """Seconds from the first command of the documented start to /ready 200."""
    zk = zookeeper_server.ZooKeeperServer(workdir, name + "-zk")
    try:
        started = time.monotonic()
        daemon = snowflaked_daemon.Daemon(binary, recycle_config(zk), workdir, name, vouch=vouch)
        ready = until(lambda: get(daemon.port, "/ready")[0] == 200, 30)
        took = time.monotonic() - started
        fenced = get(daemon.port, "/status")[1]
        daemon.stop()
        return took if ready else None, fenced
    finally:
        zk.stop()


def window(binary, workdir, name):
    zk = zookeeper_server.ZooKeeperServer(workdir, name + "-zk")
    daemons = []
    try:
        setup = snowflaked_daemon.Daemon(binary, recycle_config(zk, "short"), workdir,
                                         name + "-setup")
        setup.stop()
        backup = zk.back_up()  # the cluster, no worker ID taken
        for i in range(2):
            d = snowflaked_daemon.Daemon(binary, recycle_config(zk, "short"), workdir,
                                         f"{name}-elder{i}")
            daemons.append(d)
            until(lambda: get(d.port, "/ready")[0] == 200, 30)
        zk.restore(backup)
        back = time.monotonic()
        fresh = snowflaked_daemon.Daemon(binary, recycle_config(zk, "short"), workdir,
                                         name + "-fresh", vouch=False)
        daemons.append(fresh)
        first_id = None
        fenced = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and fenced is None:
            now = time.monotonic()
            if first_id is None and get(fresh.port, "/id/w")[0] == 200:
                first_id = now - back
            fence = (get(fresh.port, "/status")[1] or {}).get("cluster", {}) or {}
            if (fence.get("fence") or {}).get("kind") == "history_lost":
                fenced = now - back
            time.sleep(0.002)
        # The elders again: their first ID after the restore.
        again = until(lambda: all(get(d.port, "/id/w")[0] == 200 for d in daemons[:2])
                      and time.monotonic() - back, 60, 0.05)
        return fenced, first_id, again
    finally:
        for d in daemons:
            d.stop()
        zk.stop()


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--baseline")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        after, before = [], []
        for r in range(args.rounds):
            took, _ = first_start(args.binary, True, workdir, f"after{r}")
            after.append(took)
            if args.baseline:
                took, _ = first_start(args.baseline, False, workdir, f"before{r}")
                before.append(took)
        _, alone = first_start(args.binary, False, workdir, "alone")
        fence = ((alone or {}).get("cluster") or {}).get("fence") or {}
        print("1. first start of a new cluster, to /ready 200 (median of "
              f"{args.rounds}, conf/recycle.json's timings):")
        print(f"   after (cluster create, then the daemon): {median(after):.3f} s  "
              f"[{', '.join(f'{t:.3f}' for t in after if t)}]")
        if before:
            print(f"   before (the baseline daemon alone):      {median(before):.3f} s  "
                  f"[{', '.join(f'{t:.3f}' for t in before if t)}]")
            print(f"   ratio after/before: {median(after) / median(before):.2f}")
        print(f"   this build alone (no cluster create): fenced {fence.get('kind')} until "
              f"{fence.get('until')}")
        results = [window(args.binary, workdir, f"window{r}") for r in range(args.rounds)]
        print("2. a restore without the command, a fresh daemon started as ZooKeeper came back "
              "(seconds after the restore returned):")
        for fenced, first_id, again in results:
            before_fence = first_id is not None and (fenced is None or first_id < fenced)
            print(f"   fenced after {fenced if fenced is None else f'{fenced:.3f}'}; fresh "
                  f"daemon's first ID {'none before the fence' if not before_fence else f'at {first_id:.3f}: in the window'}; "
                  f"the elders issued again after {again if again is None else f'{again:.1f}'}")
        windows = sum(1 for f, i, _ in results if i is not None and (f is None or i < f))
        print(f"   the fresh daemon issued before the fence in {windows} of {len(results)} rounds; "
              f"median time to the fence {median([f for f, _, _ in results]):.3f} s")
        print("3. the elders refused for the fence's length: lease 4 s + safety margin 1 s + "
              "max skew 2 s = 7 s (short timings), from when the loss was noticed")


if __name__ == "__main__":
    main()
