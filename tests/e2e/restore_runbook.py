#!/usr/bin/python3
"""docs/operations.md's restore runbook (the `restore-nohup` block), run as
written: the block is taken out of the doc (scripts/runbook-block.py) and fed
to bash line by line, as an operator types it, with only the config's path
put in; `snowflaked` is this build's. A real ZooKeeper, a real daemon
issuing IDs. Each case: a backup taken, more IDs issued, ZooKeeper stopped,
the block's first step typed, the backup put back and ZooKeeper started
where the block says so, the rest typed; the block's exit status is what the
operator is told.

1. The fence lands: the command, sent SIGHUP meanwhile (a dropped shell),
   goes on; the block exits 0, its log says every owner confirmed the fence,
   the daemon answers 503 cluster_fenced, then issues again above the
   fence, no ID twice.
2. The fence fails (a config the cluster contradicts: exit 3 once ZooKeeper
   answers): the block exits non-zero. A runbook ending in a bare `wait`
   exits 0 here, and this fails.

Usage: restore_runbook.py SNOWFLAKED OPERATIONS_DOC"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from runbook import Failure, block, check, get, poll  # noqa: E402
from snowflaked_daemon import Daemon  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402

BLOCK = "restore-nohup"
EPOCH_MS = 1735689600000  # the default layout's epoch; the time above 22 bits
CONFIG = {
    "service": "runbook",
    "coordinator": {"type": "recycle", "heartbeat_interval_ms": 300, "lease_timeout_ms": 2000,
                    "reclaim_after_ms": 4000, "safety_margin_ms": 500, "max_skew_ms": 1000},
    "zookeeper": {"hosts": None, "session_timeout_ms": 2000, "connect_timeout_ms": 2000},
}


def the_block(doc, config):
    """The block, letter for letter but the config's path; split where the
    operator restores ZooKeeper (its one comment line that says so)."""
    text = block(doc, BLOCK, config)
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines)
          if line.startswith("#") and "restore zookeeper" in line.lower()]
    check(len(at) == 1, f"runbook {BLOCK!r}: not one comment line that says \"Restore ZooKeeper\" "
          f"(where the test puts the backup back):\n{text}")
    return "".join(lines[:at[0]]), "".join(lines[at[0]:])


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as f:
        return [int(c) for c in f.read().split()]


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def run_runbook(doc, config, zk, backup, work, case, while_running=None):
    """The block typed into bash with ZooKeeper stopped; the backup put back
    at its restore step. Returns (exit status, what the block printed,
    cluster-fence.log)."""
    first, rest = the_block(doc, config)
    cwd = os.path.join(work, case)
    os.makedirs(cwd)
    bindir = os.path.join(work, "bin")
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    zk.stop()  # 1. every ZooKeeper server stopped
    out = open(os.path.join(cwd, "bash.out"), "w+", encoding="utf-8")
    shell = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", "bash", "-s"], cwd=cwd,
                             env=env, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                             text=True)
    fence = None
    try:
        shell.stdin.write(first)
        shell.stdin.flush()
        fence = poll("the block's first step starts cluster fence",
                     lambda: next((c for c in children(shell.pid)
                                   if b"fence" in command_line(c)), None), 20)
        if while_running:
            while_running(fence)
        time.sleep(0.5)  # trying to reach ZooKeeper meanwhile
        zk.restore(backup)  # 2. the data restored, ZooKeeper started
        shell.stdin.write(rest)
        shell.stdin.close()
        try:
            status = shell.wait(120)
        except subprocess.TimeoutExpired as e:
            raise Failure(f"{case}: the runbook still runs 120 s after ZooKeeper's return") from e
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        if fence and b"fence" in command_line(fence):  # still waiting for ZooKeeper: ours
            os.kill(fence, signal.SIGKILL)
    out.seek(0)
    printed = out.read()
    log_path = os.path.join(cwd, "cluster-fence.log")
    log = open(log_path, encoding="utf-8").read() if os.path.exists(log_path) else ""
    return status, printed, log


class Load:
    """IDs asked of the daemon, every one kept."""

    def __init__(self, port):
        self.port, self.ids = port, []

    def issue(self, count=20):
        status, body = get(self.port, f"/id/order?count={count}")
        if status == 200:
            self.ids.extend(int(i) for i in body["ids"])
        return status, body


def fence_lands(doc, binary, zk, daemon, load, work):
    backup = zk.back_up()
    poll("issuing after the backup", lambda: load.issue()[0] == 200, 30)
    for _ in range(20):
        load.issue()

    def dropped_shell(fence):  # what a hangup sends: nohup's command goes on
        poll("nohup has started snowflaked",
             lambda: os.path.realpath(f"/proc/{fence}/exe") == os.path.realpath(binary), 10)
        os.kill(fence, signal.SIGHUP)

    status, printed, log = run_runbook(doc, daemon.config_path, zk, backup, work, "lands",
                                       dropped_shell)
    said = printed + log
    check("confirmed: every daemon that may issue honours the fence" in said,
          f"cluster fence did not land (a dropped shell's SIGHUP ended it?):\n{said}")
    check(status == 0, f"the fence landed, yet the runbook exited {status}:\n{said}")
    check("fenced until" in log and "confirmed" in log,
          f"cluster-fence.log does not say what the command did:\n{log}")
    answer = load.issue()
    check(answer[0] == 503 and answer[1].get("error") == "cluster_fenced",
          f"/id right after the runbook: {answer}")
    until = get(daemon.port, "/status")[1]["cluster"]["fence"]["until_ms"]
    poll("issuing again after the fence", lambda: load.issue()[0] == 200, 60)
    check(len(load.ids) == len(set(load.ids)),
          f"{len(load.ids) - len(set(load.ids))} IDs issued twice")
    check(any((i >> 22) + EPOCH_MS > until for i in load.ids), "no ID above the fence")
    print(f"the fence lands: exit 0, {len(load.ids)} IDs, none twice, fenced until {until}")


def fence_fails(doc, zk, daemon, load, work):
    config = json.load(open(daemon.config_path, encoding="utf-8"))
    config["layout"] = {"worker_bits": 8, "sequence_bits": 14}  # not the cluster's
    other = os.path.join(work, "another-layout.json")
    with open(other, "w", encoding="utf-8") as f:
        json.dump(config, f)
    backup = zk.back_up()
    poll("issuing after the backup", lambda: load.issue()[0] == 200, 30)
    status, printed, log = run_runbook(doc, other, zk, backup, work, "fails")
    said = printed + log
    check("worker_bits 8" in said and "confirmed" not in said,
          f"cluster fence did not fail as planned:\n{said}")
    check(status != 0, f"cluster fence failed, yet the runbook exited 0: the operator is told "
          f"the cluster is fenced\n--- cluster-fence.log:\n{log}")
    print(f"the fence fails: exit {status}")


def main(binary, doc):
    work = tempfile.mkdtemp(prefix="restore-runbook-")
    os.makedirs(os.path.join(work, "bin"))
    os.symlink(os.path.abspath(binary), os.path.join(work, "bin", "snowflaked"))
    zk = ZooKeeperServer(work)
    daemon = None
    try:
        config = json.loads(json.dumps(CONFIG))
        config["zookeeper"]["hosts"] = zk.hosts
        daemon = Daemon(binary, config, work, "daemon")
        load = Load(daemon.port)
        poll("the daemon issues", lambda: load.issue()[0] == 200, 30)
        fence_lands(doc, binary, zk, daemon, load, work)
        fence_fails(doc, zk, daemon, load, work)
    except Failure as e:
        print(f"FAILED: {e}\n(logs in {work})")
        return 1
    finally:
        if daemon:
            daemon.stop()
        zk.stop()
    print("passed")
    subprocess.run(["rm", "-rf", work], check=False)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
