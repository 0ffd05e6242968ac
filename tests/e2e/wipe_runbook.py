#!/usr/bin/python3
"""docs/operations.md's wipe runbook (its `wipe` and `wipe-raise` blocks), run
as written: each block is taken out of the doc (scripts/runbook-block.py) and
fed to bash, as an operator types it, with the config's path and the
export's put in (`snowflaked` is this build's; TAG and N set as the operator
sets them). Between the two, the wait the doc asks for: every daemon back
(`pool status` lists a worker ID held by it). N is what the doc says: above
the data's highest number and above what `seq list` shows the daemon held.
A real ZooKeeper, a real daemon serving sequences.

The cluster has two sequences: `invoice` (a template, numbers handed out:
the daemon holds a range of it, and makes it again after the wipe) and
`ticket` (strict, never asked for: only the export knows it). An export is
taken, more numbers handed out, ZooKeeper wiped. The blocks then fence the
cluster, import the export and raise `invoice` past the highest number
handed out: each exits 0; `ticket` is back, strict and frozen, with its
definition; `invoice` is served again with its template, above every
number handed out before, none twice.

Usage: wipe_runbook.py SNOWFLAKED OPERATIONS_DOC"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from runbook import Failure, block, check, get, poll  # noqa: E402
from snowflaked_daemon import Daemon  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402

BLOCKS = ("wipe", "wipe-raise")
EXPORT_IN_DOC = "/var/backups/snowflaked/cluster-export.json"
CONFIG = {
    "service": "wipe-runbook",
    "coordinator": {"type": "recycle", "heartbeat_interval_ms": 300, "lease_timeout_ms": 2000,
                    "reclaim_after_ms": 4000, "safety_margin_ms": 500, "max_skew_ms": 1000},
    "zookeeper": {"hosts": None, "session_timeout_ms": 2000, "connect_timeout_ms": 2000},
    "sequences": {"segment_duration_s": 1},
}


def snowflaked(binary, config, *args):
    return subprocess.run([binary, *args, "--config", config], capture_output=True, text=True,
                          timeout=120, check=False)


def the_block(doc, name, config, export):
    text = block(doc, name, config)
    return text.replace(EXPORT_IN_DOC, export) if export else text


def run_block(doc, name, config, export, cwd, env):
    """The block typed into bash -e: an operator who stops at the first step
    that fails, as the block says. What it printed."""
    shell = subprocess.run(["setpriv", "--pdeathsig", "KILL", "--", "bash", "-e", "-s"], cwd=cwd,
                           env=env, input=the_block(doc, name, config, export),
                           capture_output=True, text=True, timeout=180, check=False)
    said = shell.stdout + shell.stderr
    check(shell.returncode == 0, f"the runbook's {name!r} exited {shell.returncode}:\n{said}")
    return said


def export_text_count(doc):
    """How many times the blocks name the export: once, or the test would put
    its own in where the doc does not read one."""
    return sum(the_block(doc, name, "c", "").count(EXPORT_IN_DOC) for name in BLOCKS)


def workers_held(binary, config):
    listed = snowflaked(binary, config, "pool", "status", "--json")
    if listed.returncode != 0:
        return 0
    return sum(1 for w in json.loads(listed.stdout)["inuse"] if w["owner"])


def said_what_it_held(daemon):
    """One of the two lines the doc waits for, after the freeze's."""
    log = daemon.log_text()
    frozen = log.find("sequences: frozen:")
    return frozen >= 0 and any(line in log[frozen:] for line in (
        "this daemon's holder node says what it had handed out", "this daemon held no numbers"))


def highest_held(binary, config, tag):
    """The highest number `seq list` shows a daemon held of TAG (0: none)."""
    listed = snowflaked(binary, config, "seq", "list", "--json")
    check(listed.returncode == 0, f"seq list: {listed.stderr}")
    rows = {row["tag"]: row for row in json.loads(listed.stdout)}
    return max((h["to"] - 1 for h in rows.get(tag, {}).get("holders", [])), default=0)


def numbers(port, seen):
    """One number of invoice, kept; its status."""
    status, body = get(port, "/seq/invoice")
    if status == 200:
        check(body["id"] == f"INV-{int(body['number']):06}", f"not the template's: {body}")
        seen.append(int(body["number"]))
    return status


def main(binary, doc):
    work = tempfile.mkdtemp(prefix="wipe-runbook-")
    os.makedirs(os.path.join(work, "bin"))
    os.symlink(os.path.abspath(binary), os.path.join(work, "bin", "snowflaked"))
    zk = ZooKeeperServer(work)
    daemon = None
    try:
        config = json.loads(json.dumps(CONFIG))
        config["zookeeper"]["hosts"] = zk.hosts
        daemon = Daemon(binary, config, work, "daemon")
        path = daemon.config_path
        for args in (["seq", "create", "invoice", "--template", "INV-{n:06}", "--step", "10"],
                     ["seq", "create", "ticket", "--order", "strict", "--step", "5"]):
            made = snowflaked(binary, path, *args)
            check(made.returncode == 0, f"{args}: {made.stderr}")
        seen = []
        poll("invoice served", lambda: numbers(daemon.port, seen) == 200, 30)
        export = os.path.join(work, "cluster-export.json")
        exported = snowflaked(binary, path, "cluster", "export")
        check(exported.returncode == 0, f"cluster export: {exported.stderr}")
        with open(export, "w", encoding="utf-8") as f:
            f.write(exported.stdout)
        for _ in range(30):  # handed out after the export: only the data knows them
            numbers(daemon.port, seen)
        highest = max(seen)

        zk.wipe()
        cwd = os.path.join(work, "operator")
        os.makedirs(cwd)
        env = dict(os.environ, PATH=f"{work}/bin:{os.environ['PATH']}", TAG="invoice")
        exported_count = export_text_count(doc)
        check(exported_count == 1,
              f"the wipe blocks name the export {EXPORT_IN_DOC} {exported_count} times, not once")
        said = run_block(doc, BLOCKS[0], path, export, cwd, env)
        check("made again, frozen: \"ticket\"" in said, f"the import did not make ticket:\n{said}")
        # The doc's wait: every daemon back, its log saying what it held.
        poll("the daemon back (pool status)", lambda: workers_held(binary, path) >= 1, 60)
        poll("the daemon's log saying what it held", lambda: said_what_it_held(daemon), 60)
        env["N"] = str(max(highest, highest_held(binary, path, "invoice")))
        said += run_block(doc, BLOCKS[1], path, export, cwd, env)
        check("confirmed: every daemon that may issue honours the fence" in said,
              f"the fence was not confirmed:\n{said}")

        listed = snowflaked(binary, path, "seq", "list", "--json")
        rows = {row["tag"]: row for row in json.loads(listed.stdout)}
        check(rows.get("ticket", {}).get("frozen") is True, f"ticket after the runbook: {rows}")
        check("strict" in json.dumps(rows["ticket"]), f"ticket is not strict: {rows['ticket']}")
        after = []
        poll("invoice served again", lambda: numbers(daemon.port, after) == 200, 60)
        for _ in range(10):
            numbers(daemon.port, after)
        check(min(after) > highest, f"invoice handed out {min(after)} again (up to {highest} "
              f"went out before)")
        check(len(set(seen + after)) == len(seen + after), "a number handed out twice")
        print(f"the wipe runbook: exit 0, ticket back frozen and strict, invoice from "
              f"{min(after)} (up to {highest} before the wipe)")
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
