"""The day's turn of a fleet, simulated (scale_sim.py --day-turn T): N
simulated daemons, each with its sequence supplier (coordinator_fleet.cpp's
TAG arguments), serving T sequences that restart each day in UTC. Every
clock (ZooKeeper's, `cluster create`'s, `seq create`'s, the fleet's) is
moved by libfaketime (monotonic clocks left real) so that midnight comes
--turn-lead s after the launch (the start, its first asks spread over a
minute, and two heartbeats at rest must fit before 135 s ahead of it); then, once a second from 135 s
before midnight to 60 s after, the ZooKeeper requests the fleet sent, the
packets ZooKeeper received, and how many daemons hold every tag's next
day's range. Printed per N:

  rest req/s     requests a second before the turn (heartbeats, pings)
  peak req/s     the most in one second from 122 s before midnight on
  peak/rest      the burst, as a multiple of the rest
  turn req/d     requests per daemon beyond the rest, over the turn
  peak pkts/s    the most packets ZooKeeper received in one second
  first s        seconds before midnight when the first daemon held every
                 tag's next range
  all s          ... the last one (negative: after midnight; "never":
                 not within 60 s after it)
With --log-dir, the samples go to turn-N.tsv there.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import time

import zookeeper_server
from seq_period import clock_env  # libfaketime's wall clock, as that benchmark's

BEFORE_S = 135  # sampled from this many seconds before midnight
REST_UNTIL_S = 122  # at rest until this many (the first takes: 120 s before)
AFTER_S = 60  # ... to this many after (a day is let go of 32 to 47 s after it ends)


def sample(fleets, zk, boundary_ms):
    """(requests the fleet sent, packets ZooKeeper received, daemons
    holding every tag's range of the period from boundary_ms)."""
    requests = fleets.stats()[0]
    for p in fleets.processes:
        p.stdin.write(f"turn {boundary_ms}\n")
        p.stdin.flush()
    holding = sum(int(fleets.read(p, "turn", 30)[0]) for p in fleets.processes)
    try:
        packets = zk.mntr().get("zk_packets_received")
    except OSError:
        packets = None
    return requests, packets, holding


def rate(samples, i, j, field):
    """Per second between samples i and j (each (fake s, requests, packets, holding))."""
    a, b = samples[i], samples[j]
    if a[field] is None or b[field] is None or b[0] <= a[0]:
        return 0.0
    return (b[field] - a[field]) / (b[0] - a[0])


def turn(fleet_binary, snowflaked, n, args, fleets_class, config, log_dir=None):
    tags = [f"turn{t}" for t in range(args.day_turn)]
    launch = time.time()
    # A UTC midnight at least two days ahead, --turn-lead s of faked time
    # after the launch.
    boundary = (int(launch) // 86400 + 2) * 86400
    offset = int(boundary - args.turn_lead - launch)
    fake = lambda: time.time() + offset  # noqa: E731
    env = clock_env(offset)
    with tempfile.TemporaryDirectory(prefix="snowflake-day-turn-") as work:
        zk = zookeeper_server.ZooKeeperServer(work, "zk", extra="maxClientCnxns=0\n", heap="1g",
                                              tick_ms=args.tick_ms,
                                              env=clock_env(offset, jvm=True))
        fleets = None
        try:
            cfg = config(zk, n, args.heartbeat_ms, os.path.join(work, "create-state"),
                         args.session_ms)
            cfg["sequences"] = {"enabled": True}
            config_path = os.path.join(work, "config.json")
            with open(config_path, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            run_env = dict(os.environ, **env)
            subprocess.run([snowflaked, "cluster", "create", "--config", config_path,
                            "--wait", "30000"], check=True, stdout=subprocess.DEVNULL, env=run_env)
            for tag in tags:
                subprocess.run([snowflaked, "seq", "create", tag, "--reset", "daily",
                                "--time-zone", "UTC", "--template", tag + "-{yyyy}{MM}{dd}-{n}",
                                "--config", config_path],
                               check=True, stdout=subprocess.DEVNULL, env=run_env)
            fleets = fleets_class(fleet_binary, config_path, work, n, args.per_process,
                                  env=env, tags=tags)
            fleets.all_ready(limit=120 + n / 10)
            time.sleep(2 * args.heartbeat_ms / 1000)  # at rest: every daemon has beaten since
            if fake() > boundary - BEFORE_S:
                sys.exit(f"scale_sim: the fleet was ready {fake() - boundary + BEFORE_S:.0f} s "
                         f"too late for the turn: a larger --turn-lead")
            time.sleep(max(0.0, boundary - BEFORE_S - fake()))
            samples = []
            boundary_ms = boundary * 1000
            while fake() < boundary + AFTER_S:
                tick = fake()
                samples.append((tick, *sample(fleets, zk, boundary_ms)))
                time.sleep(max(0.0, tick + 1 - fake()))
            if log_dir:  # the series: seconds from midnight, requests, packets, holding
                with open(os.path.join(log_dir, f"turn-{n}.tsv"), "w", encoding="utf-8") as f:
                    for t, *rest in samples:
                        f.write("\t".join([f"{t - boundary:.1f}", *map(str, rest)]) + "\n")
            return figures(n, samples, boundary)
        finally:
            if fleets:
                fleets.kill()
            zk.stop()


def figures(n, samples, boundary):
    rest_end = max(i for i, s in enumerate(samples) if s[0] <= boundary - REST_UNTIL_S)
    rest = rate(samples, 0, rest_end, 1)
    turn_rates = [rate(samples, i - 1, i, 1) for i in range(rest_end + 1, len(samples))]
    packets = [rate(samples, i - 1, i, 2) for i in range(1, len(samples))]
    span = samples[-1][0] - samples[rest_end][0]
    beyond = samples[-1][1] - samples[rest_end][1] - rest * span
    holding = [(s[0], s[3]) for s in samples]
    first = next((t for t, h in holding if h > 0), None)
    last = next((t for t, h in holding if h >= n), None)
    peak = max(turn_rates, default=0.0)
    return {"n": n, "rest": rest, "peak": peak, "ratio": peak / rest if rest else math.inf,
            "turn_per_daemon": beyond / n, "peak_packets": max(packets, default=0.0),
            "first_s": None if first is None else boundary - first,
            "all_s": None if last is None else boundary - last}


def print_header():
    print(f"{'daemons':>8} {'tags':>5} {'rest req/s':>11} {'peak req/s':>11} {'peak/rest':>10} "
          f"{'turn req/d':>11} {'peak pkts/s':>12} {'first s':>8} {'all s':>7}")


def print_row(r, tags):
    first = "never" if r["first_s"] is None else f"{r['first_s']:.0f}"
    last = "never" if r["all_s"] is None else f"{r['all_s']:.0f}"
    print(f"{r['n']:>8} {tags:>5} {r['rest']:>11.0f} {r['peak']:>11.0f} {r['ratio']:>10.1f} "
          f"{r['turn_per_daemon']:>11.1f} {r['peak_packets']:>12.0f} {first:>8} {last:>7}",
          flush=True)
