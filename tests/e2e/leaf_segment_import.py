#!/usr/bin/python3
"""Coming from Leaf-segment, for real: a MariaDB server (Debian's
mariadb-server, started here on a private socket with a temp data dir, no
network) holding Leaf's own `leaf_alloc` table, its rows moved on as Leaf
servers move them (`UPDATE leaf_alloc SET max_id = max_id + step`, then the
segment [max_id - step, max_id) is theirs; a custom step too, as Leaf's
dynamic step does). Its `mysql --batch` output goes to `snowflaked seq
import --leaf-alloc`; then a real daemon serves each tag above every number a
Leaf server could have handed out. A Leaf server still running takes one
more segment; the import run again lifts the sequence past it (exit 0), and
the daemon drops what it held below. A bad file is exit 2 naming the line.

Usage: leaf_segment_import.py SNOWFLAKED"""

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import snowflaked_daemon  # noqa: E402
import zookeeper_server  # noqa: E402

BINARY = sys.argv[1]

# Leaf's schema, as its README creates it.
LEAF_SCHEMA = """
CREATE DATABASE leaf;
USE leaf;
CREATE TABLE `leaf_alloc` (
  `biz_tag` varchar(128)  NOT NULL DEFAULT '',
  `max_id` bigint(20) NOT NULL DEFAULT '1',
  `step` int(11) NOT NULL,
  `description` varchar(256)  DEFAULT NULL,
  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`biz_tag`)
) ENGINE=InnoDB;
INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES
  ('order', 1, 1000, 'orders'), ('invoice', 1, 10, 'invoices'), ('user.id', 1, 2000, 'never used');
"""
SELECT = "SELECT biz_tag, max_id, step FROM leaf_alloc"


def fail(what):
    print(f"leaf_segment_import: FAILED: {what}")
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


class MariaDB:
    """mariadbd on a socket in `work`, no TCP, killed with the test."""

    def __init__(self, work):
        self.datadir = os.path.join(work, "mariadb")
        self.socket = os.path.join(work, "mariadb.sock")
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log = os.path.join(work, "mariadb.log")
        self.process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "mariadbd", "--no-defaults", f"--datadir={self.datadir}",
             f"--socket={self.socket}", "--skip-networking", "--user=root",
             f"--pid-file={os.path.join(work, 'mariadb.pid')}", f"--log-error={self.log}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while subprocess.run(self.client("SELECT 1"), capture_output=True).returncode != 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                fail(f"MariaDB did not start (log: {self.log})")
            time.sleep(0.1)

    def client(self, sql, database=None, batch=False):
        cmd = ["mariadb", "--no-defaults", f"--socket={self.socket}", "-u", "root"]
        if batch:
            cmd.append("--batch")
        cmd += ["-e", sql]
        if database:
            cmd.append(database)
        return cmd

    def run(self, sql, database="leaf", batch=False):
        return subprocess.run(self.client(sql, database, batch), check=True, capture_output=True,
                              text=True).stdout

    def stop(self):
        self.process.terminate()
        self.process.wait(60)


def leaf_takes_segment(db, tag, step=None):
    """What a Leaf server does for a segment (updateMaxIdAndGetLeafAlloc, or
    ...ByCustomStep with a dynamic step), in one transaction: the range it
    hands out from then on."""
    update = (f"UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = '{tag}'" if step is None
              else f"UPDATE leaf_alloc SET max_id = max_id + {step} WHERE biz_tag = '{tag}'")
    out = db.run(f"BEGIN; {update}; SELECT max_id, step FROM leaf_alloc WHERE biz_tag = '{tag}'; COMMIT;",
                 batch=True)
    max_id, default_step = (int(x) for x in out.strip().splitlines()[-1].split("\t"))
    taken = step if step is not None else default_step
    return (max_id - taken, max_id)


def numbers(port, tag, count):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", f"/seq/{tag}?count={count}")
    r = conn.getresponse()
    body = r.read()
    check(r.status == 200, f"/seq/{tag}: {r.status} {body[:200]!r}")
    return [int(x) for x in json.loads(body)["ids"]]


def import_file(config, path):
    return subprocess.run([BINARY, "seq", "import", "--leaf-alloc", path, "--config", config],
                          capture_output=True, text=True, timeout=60)


def main():
    check(shutil.which("mariadbd"), "mariadbd is not installed (scripts/install-deps.sh installs it)")
    with tempfile.TemporaryDirectory() as work:
        db = MariaDB(work)
        zk = zookeeper_server.ZooKeeperServer(work)
        daemon = None
        try:
            db.run(LEAF_SCHEMA, database=None)
            # Two Leaf servers at work: each tag's segments as they took them.
            leaf_ranges = {"order": [], "invoice": []}
            leaf_ranges["order"].append(leaf_takes_segment(db, "order"))
            leaf_ranges["order"].append(leaf_takes_segment(db, "order"))
            leaf_ranges["order"].append(leaf_takes_segment(db, "order", step=4000))  # dynamic step
            leaf_ranges["invoice"].append(leaf_takes_segment(db, "invoice"))
            alloc = os.path.join(work, "leaf_alloc.tsv")
            with open(alloc, "w", encoding="utf-8") as f:
                f.write(db.run(SELECT, batch=True))

            daemon = snowflaked_daemon.Daemon(
                BINARY, {"service": "leafimport", "coordinator": {"type": "recycle"},
                         "zookeeper": {"hosts": zk.hosts, "session_timeout_ms": 4000}},
                work, "daemon")
            done = import_file(daemon.config_path, alloc)
            check(done.returncode == 0, f"seq import exit {done.returncode}: {done.stdout}{done.stderr}")
            for tag in ("order", "invoice", "user.id"):
                check(f'"{tag}" created' in done.stdout, f"{tag} not created: {done.stdout}")

            highest_leaf = {t: max(end for _, end in r) - 1 for t, r in leaf_ranges.items()}
            got = {}
            deadline = time.monotonic() + 20
            while len(got) < 3:
                try:
                    for tag in ("order", "invoice", "user.id"):
                        got.setdefault(tag, numbers(daemon.port, tag, 5))
                except SystemExit:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            for tag, top in highest_leaf.items():
                check(min(got[tag]) > top, f"{tag}: {got[tag]} not above Leaf's {top}")
            check(got["order"][0] == 1 + 1000 + 1000 + 4000, f"order starts at {got['order'][0]}")
            check(got["user.id"][0] == 1, f"user.id (never used by Leaf) starts at {got['user.id'][0]}")

            # A Leaf server not stopped yet took one more segment: the import
            # again lifts the sequence past it, with seq raise's contract.
            late = leaf_takes_segment(db, "order")
            with open(alloc, "w", encoding="utf-8") as f:
                f.write(db.run(SELECT, batch=True))
            again = import_file(daemon.config_path, alloc)
            check(again.returncode == 0, f"seq import again: exit {again.returncode}: {again.stdout}{again.stderr}")
            check("confirmed" in again.stdout, f"no confirmation: {again.stdout}")
            after = numbers(daemon.port, "order", 5)
            check(min(after) >= late[1], f"order after the second import: {after}, Leaf's late range {late}")

            bad = os.path.join(work, "bad.tsv")
            with open(bad, "w", encoding="utf-8") as f:
                f.write("biz_tag\tmax_id\tstep\norder\tlots\t1000\n")
            refused = import_file(daemon.config_path, bad)
            check(refused.returncode == 2 and "line 2" in refused.stderr,
                  f"a bad file: exit {refused.returncode}: {refused.stderr}")
            print(f"leaf_segment_import: OK: Leaf's segments {leaf_ranges}, then {late} for order; "
                  f"snowflaked from {got['order'][0]}, {got['invoice'][0]}, {got['user.id'][0]}; "
                  f"after the second import, order from {after[0]}")
        finally:
            if daemon:
                daemon.stop()
            zk.stop()
            db.stop()


if __name__ == "__main__":
    main()
