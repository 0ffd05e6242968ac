#!/usr/bin/python3
"""What ZooKeeper pays for fleets in the thousands, simulated on one
machine: the real coordinator code of N daemons (tests/bench/
coordinator_fleet.cpp: claim in the claimers' line, heartbeat, the elected
reaper, release), a thousand to a process, against a real ZooKeeper (a
3-node ensemble with --ensemble). What a daemon adds to that (HTTP, its
sequences' session) does not reach ZooKeeper but for the second session's
pings: scale.py measures whole daemons.

For each N: a fresh ZooKeeper (maxClientCnxns=0: every simulated daemon
shares one address), `snowflaked cluster create` with a pool of at least
N (worker bits to fit), the processes started at once; printed per N:

  ready s           from the start to the last daemon that may issue
  start pkts/d      packets ZooKeeper received during the start, per daemon
                    (mntr, summed over the members)
  start writes/d    transactions committed then (the zxid), per daemon
  start req/d       requests the daemons had sent when all were ready
  rest pkts/d/beat  packets per daemon per heartbeat interval at rest,
                    over --idle-seconds once every daemon has beaten twice
  rest req/d/beat   requests per daemon per heartbeat at rest (pings not
                    counted; the reaper's listings spread over all)
  conns/d           client connections per daemon
  reclaim s         with two processes or more: the last one killed (kill
                    -9, its sessions left to expire), how long until the
                    others had reclaimed every worker ID it held
  stop s            every daemon stopped cleanly (its ID given back)

--tick-ms sets ZooKeeper's tickTime (default 2000, ZooKeeper's own): with
a test's 100 ms ticks a follower on a machine saturated by 5,000 simulated
daemons misses its sync limit (10 ticks), and the ensemble re-elects in a
loop, refusing sessions each time.

--waves starts the processes one after another, each once the one before
is ready (a rollout in batches of --per-process, as a Deployment's
maxSurge makes one): where one machine cannot start them all at once,
the fleet at rest is still reached and measured; ready s is then the
whole rollout's. It stops them the same way, a process after another
(maxUnavailable): thousands of clean stops at once go one at a time on the
pool's move count (docs/CONTRIBUTING.md, "Benchmarks").

--session-ms sets the daemons' session_timeout_ms (10 s, the container
config's, by default): an idle session pings after a third of it, which at
rest is most of what a fleet sends.

--check START,REST exits 1 if start pkts/d exceeds START or rest pkts/d/beat
exceeds REST at any N (the regression test CI runs at a small N).

--mass-stop K measures a fleet stopping at once instead: K daemons that keep
running are started first (a process of their own; the reaper's role is
theirs), then the N, and once all are at rest the N stop at once (every
process, 64 stops in flight in each). Printed per N:

  stop s            from the stop command to the last stopped daemon (the
                    slowest process's own count)
  back s            from the stop until ZooKeeper holds no inuse node but
                    the K's (every stopped daemon's worker ID in notuse)
  moves             bumps of the pool's move count meanwhile (each refuses
                    every running daemon's next heartbeat write once)
  retries           heartbeat writes of the K refused by a move and sent
                    again, from the stop to a heartbeat after "back"
  max/daemon        the most of one of the K
  max/beat          the most of one heartbeat ("-" these three: a build that
                    does not count them, as a BASELINE_REV before they were)

--day-turn T measures the day's turn instead: N daemons serving T
sequences that restart each day, their clocks faked to just before a
midnight (tests/bench/day_turn.py says what is printed); --turn-lead S:
the faked seconds from the launch to midnight (the start, a minute of
first asks, two heartbeats and 135 s; 300 by default, 420 for 1,000
daemons and 8 tags here). Standalone ZooKeeper only (--ensemble and
--check are for the other modes).

Usage: scale_sim.py FLEET SNOWFLAKED N [N ...] [--ensemble] [--heartbeat-ms MS]
                    [--idle-seconds S] [--per-process K] [--tick-ms MS]
                    [--waves] [--session-ms MS] [--check START,REST] [--mass-stop K]
                    [--day-turn T [--turn-lead S]]
"""

import argparse
import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import host_state  # noqa: E402,F401  (never the host's state directory)
import zookeeper_server  # noqa: E402


LOG_DIR = None  # --log-dir


def worker_bits_for(n):
    """The layout's worker bits: a pool of at least N (1,024 at least)."""
    return max(10, math.ceil(math.log2(n)))


def config(zk, n, heartbeat_ms, state_dir, session_ms=10000):
    # conf/recycle.json's proportions (lease 3 heartbeats, reclaim 5).
    bits = worker_bits_for(n)
    return {"service": "scale-sim",
            "layout": {"time_bits": 41, "worker_bits": bits, "sequence_bits": 22 - bits},
            "coordinator": {"type": "recycle",
                            "heartbeat_interval_ms": heartbeat_ms,
                            "lease_timeout_ms": 3 * heartbeat_ms,
                            "reclaim_after_ms": 5 * heartbeat_ms,
                            "safety_margin_ms": heartbeat_ms,
                            # Each daemon renews its state file's time
                            # reservation on its own disk; here thousands
                            # share one: the longest interval (and tmpfs).
                            "persist_interval_ms": 1000, "max_boot_wait_ms": 10000,
                            # cluster create's record of the throwaway cluster:
                            # never the host's state directory. (The simulated
                            # daemons each have one of their own.)
                            "state_dir": state_dir},
            "zookeeper": {"hosts": zk.hosts, "root": "/snowflake/scale-sim",
                          "session_timeout_ms": session_ms, "connect_timeout_ms": 30000},
            "sequences": {"enabled": False}, "log_level": "warn"}


class Fleets:
    """N simulated daemons in processes of at most `per_process` each."""

    def __init__(self, binary, config_path, work, n, per_process, waves=False, first=0,
                 env=None, tags=()):
        self.processes = []
        self.ready_requests = {}  # pid: requests when ready, read while starting in waves
        self.counts = []
        state = tempfile.mkdtemp(prefix="snowflake-scale-sim-",
                                 dir="/dev/shm" if os.path.isdir("/dev/shm") else work)
        self.state = state
        end = first + n
        self.lines = {}
        self.started = time.monotonic()
        while first < end:
            count = min(per_process, end - first)
            log = open(os.path.join(LOG_DIR or work, f"fleet{len(self.processes)}.log"), "w",
                       encoding="utf-8")  # kept with --log-dir
            self.processes.append(subprocess.Popen(
                ["setpriv", "--pdeathsig", "KILL", "--", binary, config_path, state,
                 str(first), str(count), *tags],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                bufsize=1, env=dict(os.environ, **(env or {}))))
            self.counts.append(count)
            first += count
            # A thread per process hands its lines over (a select on a pipe
            # would miss the lines already read into the pipe's buffer).
            p = self.processes[-1]
            self.lines[p.pid] = queue.Queue()
            threading.Thread(target=self.pump, args=(p, self.lines[p.pid]), daemon=True).start()
            if waves:
                try:
                    self.ready_requests[p.pid] = int(self.read(p, "ready", 120 + count / 10)[1])
                except BaseException:  # a wave not ready: nobody else holds us to kill()
                    self.kill()
                    raise

    @staticmethod
    def pump(p, lines):
        # Everything else a process prints (its daemons' warnings) goes to
        # --log-dir, if given.
        log = (open(os.path.join(LOG_DIR, f"fleet-{p.pid}.out"), "w", encoding="utf-8")
               if LOG_DIR else None)
        for line in p.stdout:
            lines.put(line)
            if log and not line.startswith(("waiting", "ready", "stats", "stopped")):
                log.write(f"{time.strftime('%T')} {line}")
                log.flush()
        lines.put(None)

    def read(self, p, word, limit):
        """The next line of `p` that starts with `word`, split; exits on a
        fatal line, an exit or past `limit` seconds."""
        deadline = time.monotonic() + limit
        while True:
            try:
                line = self.lines[p.pid].get(timeout=max(0.001, deadline - time.monotonic()))
            except queue.Empty:
                sys.exit(f"scale_sim: no '{word}' within {limit} s")
            if line is None:
                sys.exit(f"scale_sim: a fleet exited ({p.poll()}) before '{word}'")
            if line.startswith("fatal"):
                sys.exit(f"scale_sim: {line.strip()}")
            if line.startswith(word):
                return line.split()[1:]
            if line.startswith("waiting"):  # every 5 s while a process waits: its progress
                print(f"scale_sim: {p.pid} {line.strip()}", file=sys.stderr, flush=True)

    def all_ready(self, limit):
        """Seconds to the last ready daemon, and the requests sent by then."""
        requests = 0
        for p in self.processes:
            if p.pid in self.ready_requests:
                requests += self.ready_requests[p.pid]
            else:
                requests += int(self.read(p, "ready", limit)[1])
        return time.monotonic() - self.started, requests

    def stats(self, processes=None):
        """Summed over the processes: requests, heartbeats, ready, reapers,
        reclaimed, heartbeat retries since `mark` (-1: not counted); and the
        most retries of one daemon, and of one heartbeat."""
        total = [0, 0, 0, 0, 0, 0]
        most = [0, 0]
        for p in processes or self.processes:
            p.stdin.write("stats\n")
            p.stdin.flush()
        for p in processes or self.processes:
            fields = [int(v) for v in self.read(p, "stats", 30)]
            counted = total[5] >= 0 and fields[5] >= 0
            total = [a + b for a, b in zip(total, fields[:6])]
            total[5] = total[5] if counted else -1
            most = [max(most[0], fields[6]), max(most[1], fields[7])] if counted else [-1, -1]
        return total + most

    def ask(self, command, word, limit=30):
        """One command to the first process, its answer split."""
        p = self.processes[0]
        p.stdin.write(command + "\n")
        p.stdin.flush()
        return self.read(p, word, limit)

    def kill_last(self):
        p = self.processes.pop()
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        return self.counts.pop()

    def stop(self, limit, waves=False):
        """Seconds until every process stopped its daemons: all at once, or
        in waves a process after another (a rollout's maxUnavailable)."""
        started = time.monotonic()
        for p in self.processes:
            p.stdin.write("stop\n")
            p.stdin.flush()
            if waves:
                self.read(p, "stopped", limit)
        for p in [] if waves else self.processes:
            self.read(p, "stopped", limit)
        return time.monotonic() - started

    def kill(self):
        for p in self.processes:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.state, ignore_errors=True)


def delta(a, b, name):
    return b.get(name, 0) - a.get(name, 0)


def reclaim_seconds(fleets, heartbeat_ms, limit):
    """The last process killed: seconds until the others reclaimed its IDs."""
    if len(fleets.processes) < 2:
        return None
    before = fleets.stats()[4]
    killed = fleets.kill_last()
    started = time.monotonic()
    while fleets.stats()[4] - before < killed:
        if time.monotonic() - started > limit:
            # The row is still printed (the other figures stand); the run fails.
            print(f"scale_sim: {killed} dead daemons' IDs not reclaimed within {limit} s",
                  file=sys.stderr)
            return math.inf
        time.sleep(heartbeat_ms / 4000)
    return time.monotonic() - started


def mass_stop(fleet_binary, zk, config_path, work, n, args):
    """K keepers, then N started, then the N stopped at once: see --mass-stop."""
    keep = args.mass_stop
    beat_s = args.heartbeat_ms / 1000
    keepers = Fleets(fleet_binary, config_path, work, keep, keep, waves=True)
    fleets = None
    try:
        fleets = Fleets(fleet_binary, config_path, work, n, args.per_process, first=keep)
        fleets.all_ready(limit=120 + n / 10)
        time.sleep(2 * beat_s)  # at rest: every daemon has beaten since
        keepers.ask("mark", "marked")
        moves_before = int(keepers.ask("pool", "pool")[2])
        if moves_before < 0:
            sys.exit("scale_sim: the pool's move count could not be read")
        started = time.monotonic()
        for p in fleets.processes:
            p.stdin.write("stop\n")
            p.stdin.flush()
        back = None
        limit = 120 + n / 10
        while back is None:
            inuse = int(keepers.ask("pool", "pool")[0])  # -1: not read this time
            if 0 <= inuse <= keep:
                back = time.monotonic() - started
            elif time.monotonic() - started > limit:
                print(f"scale_sim: {inuse - keep} worker IDs not back within {limit} s",
                      file=sys.stderr)
                back = math.inf
            else:
                time.sleep(0.2)
        # Each process's own count, from its stop command to its last stop.
        stopped = max(float(fleets.read(p, "stopped", limit)[0]) for p in fleets.processes)
        moves = int(keepers.ask("pool", "pool")[2]) - moves_before
        time.sleep(beat_s * 1.5)  # every keeper has beaten since the last move
        totals = keepers.stats()
        return {"n": n, "keep": keep, "stop_s": stopped, "back_s": back, "moves": moves,
                "retries": totals[5], "most": totals[6], "most_beat": totals[7]}
    finally:
        if fleets:
            fleets.kill()
        keepers.kill()


def measure(fleet_binary, snowflaked, n, args):
    beat_s = args.heartbeat_ms / 1000
    with tempfile.TemporaryDirectory(prefix="snowflake-scale-sim-") as work:
        extra = "maxClientCnxns=0\n"
        heap = "1g"  # thousands of sessions
        tick = args.tick_ms
        zk = (zookeeper_server.ZooKeeperEnsemble(work, extra=extra, heap=heap, tick_ms=tick)
              if args.ensemble
              else zookeeper_server.ZooKeeperServer(work, "zk", extra=extra, heap=heap, tick_ms=tick))
        askers = 3 if args.ensemble else 1  # the connections mntr itself makes
        fleets = None
        try:
            config_path = os.path.join(work, "config.json")
            with open(config_path, "w", encoding="utf-8") as f:
                json.dump(config(zk, n + args.mass_stop, args.heartbeat_ms,
                             os.path.join(work, "create-state"), args.session_ms), f)
            subprocess.run([snowflaked, "cluster", "create", "--config", config_path,
                            "--wait", "30000"], check=True, stdout=subprocess.DEVNULL)
            if args.mass_stop:
                return mass_stop(fleet_binary, zk, config_path, work, n, args)
            before, zxid_before = zk.mntr(), zk.zxid()
            fleets = Fleets(fleet_binary, config_path, work, n, args.per_process, args.waves)
            took, start_requests = fleets.all_ready(limit=120 + n / 10)
            started, zxid_started = zk.mntr(), zk.zxid()
            time.sleep(2 * beat_s)  # every daemon has beaten since
            rest_from, stats_from = zk.mntr(), fleets.stats()
            time.sleep(args.idle_seconds)
            rest_to, stats_to = zk.mntr(), fleets.stats()
            beats = max(1, stats_to[1] - stats_from[1])
            result = {
                "n": n, "ready_s": took,
                "start_packets": delta(before, started, "zk_packets_received") / n,
                "start_writes": (zxid_started - zxid_before) / n,
                "start_requests": start_requests / n,
                "rest_packets_beat":
                    delta(rest_from, rest_to, "zk_packets_received") / n / args.idle_seconds
                    * beat_s,
                "rest_requests_beat": (stats_to[0] - stats_from[0]) / beats,
                "connections": (rest_to.get("zk_num_alive_connections", askers) - askers) / n,
                "reapers": stats_to[3],
            }
            result["reclaim_s"] = reclaim_seconds(fleets, args.heartbeat_ms, 60 + 10 * beat_s)
            result["stop_s"] = fleets.stop(limit=60 + n / 10, waves=args.waves)
            return result
        finally:
            if fleets:
                fleets.kill()
            zk.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fleet")
    parser.add_argument("snowflaked")
    parser.add_argument("n", type=int, nargs="+")
    parser.add_argument("--ensemble", action="store_true")
    parser.add_argument("--heartbeat-ms", type=int, default=10000)
    parser.add_argument("--idle-seconds", type=float, default=30)
    parser.add_argument("--per-process", type=int, default=1000)
    parser.add_argument("--tick-ms", type=int, default=2000)
    parser.add_argument("--waves", action="store_true")
    parser.add_argument("--session-ms", type=int, default=10000)
    parser.add_argument("--log-dir", help="keep what the processes print besides their figures")
    parser.add_argument("--check", help="START,REST: bounds on start pkts/d and rest pkts/d/beat")
    parser.add_argument("--mass-stop", type=int, default=0, metavar="K",
                        help="K keep running while the N stop at once: see above")
    parser.add_argument("--day-turn", type=int, default=0, metavar="T",
                        help="T sequences restarting each day: the day's turn, see above")
    parser.add_argument("--turn-lead", type=int, default=300, metavar="S")
    args = parser.parse_args()
    global LOG_DIR  # pylint: disable=global-statement
    LOG_DIR = args.log_dir
    if LOG_DIR:
        os.makedirs(LOG_DIR, exist_ok=True)
    bounds = [float(v) for v in args.check.split(",")] if args.check else None
    started = "in waves of a process" if args.waves else "at once"
    zookeeper = "3-node ensemble" if args.ensemble else "standalone ZooKeeper"
    print(f"simulated recycle daemons (coordinators, {args.per_process} to a process) started "
          f"{started} against one {zookeeper}, heartbeat {args.heartbeat_ms} ms, sessions "
          f"{args.session_ms} ms, tickTime {args.tick_ms} ms:")
    failed = False
    if args.day_turn:
        import day_turn  # pylint: disable=import-outside-toplevel
        day_turn.print_header()
        for n in args.n:
            r = day_turn.turn(args.fleet, args.snowflaked, n, args, Fleets, config, LOG_DIR)
            day_turn.print_row(r, args.day_turn)
            failed = failed or r["all_s"] is None
        sys.exit(1 if failed else 0)
    if args.mass_stop:
        print(f"{'daemons':>8} {'keep':>6} {'stop s':>7} {'back s':>7} {'moves':>6} "
              f"{'retries':>8} {'max/daemon':>11} {'max/beat':>9}")
        for n in args.n:
            r = measure(args.fleet, args.snowflaked, n, args)
            counted = r["retries"] >= 0
            print(f"{r['n']:>8} {r['keep']:>6} {r['stop_s']:>7.1f} {r['back_s']:>7.1f} "
                  f"{r['moves']:>6} {r['retries'] if counted else '-':>8} "
                  f"{r['most'] if counted else '-':>11} "
                  f"{r['most_beat'] if counted else '-':>9}", flush=True)
            failed = failed or r["back_s"] == math.inf
        sys.exit(1 if failed else 0)
    print(f"{'daemons':>8} {'ready s':>8} {'start pkts/d':>13} {'start writes/d':>15} "
          f"{'start req/d':>12} {'rest pkts/d/beat':>17} {'rest req/d/beat':>16} {'conns/d':>8} "
          f"{'reapers':>8} {'reclaim s':>10} {'stop s':>7}")
    for n in args.n:
        r = measure(args.fleet, args.snowflaked, n, args)
        reclaim = ("-" if r["reclaim_s"] is None
                   else "over" if r["reclaim_s"] == math.inf else f"{r['reclaim_s']:.1f}")
        print(f"{r['n']:>8} {r['ready_s']:>8.1f} {r['start_packets']:>13.1f} "
              f"{r['start_writes']:>15.1f} {r['start_requests']:>12.1f} "
              f"{r['rest_packets_beat']:>17.1f} {r['rest_requests_beat']:>16.2f} "
              f"{r['connections']:>8.2f} {r['reapers']:>8} {reclaim:>10} {r['stop_s']:>7.1f}",
              flush=True)
        failed = failed or r["reclaim_s"] == math.inf
        if bounds and (r["start_packets"] > bounds[0] or r["rest_packets_beat"] > bounds[1]):
            print(f"scale_sim: over the bounds {bounds[0]} and {bounds[1]}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
