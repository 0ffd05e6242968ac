#!/usr/bin/python3
"""scripts/run.sh as the README tells a new user to run it, from a fresh
checkout (the files git has, nothing built, no .local/): with arguments,
which add to the default config (recycle mode, conf/recycle.json) instead of
replacing it; ZooKeeper started by the script (on a port of this test's:
ZK_PORT, and SNOWFLAKED_ZOOKEEPER_HOSTS pointing the daemon at it); and
Ctrl-C, which stops the daemon (exit 0, its worker ID given back) and the
ZooKeeper the script started.

Usage: run_test.py SOURCE_DIR
"""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def get_json(url):
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
    except OSError:
        return None, None


def fail(what, log):
    with open(log, errors="replace") as f:
        sys.exit(f"FAIL: {what}\n--- run.sh's output (end):\n{f.read()[-6000:]}")


def main(source):
    work = tempfile.mkdtemp(prefix="run-sh-test-")
    checkout = os.path.join(work, "checkout")
    log = os.path.join(work, "run.log")
    group = None
    try:
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               cwd=source, capture_output=True, check=True).stdout.split(b"\0")
        for name in filter(None, (f.decode() for f in files)):
            if os.path.isfile(os.path.join(source, name)):
                os.makedirs(os.path.dirname(os.path.join(checkout, name)) or checkout, exist_ok=True)
                shutil.copy2(os.path.join(source, name), os.path.join(checkout, name))
        zk_port, http_port = free_port(), free_port()
        env = dict(os.environ, ZK_PORT=str(zk_port),
                   SNOWFLAKED_ZOOKEEPER_HOSTS=f"127.0.0.1:{zk_port}")
        started = time.monotonic()
        with open(log, "w") as out:
            # Its own process group, as a terminal gives a command: Ctrl-C
            # reaches the whole group.
            run = subprocess.Popen(["bash", "scripts/run.sh", "--log-level", "debug",
                                    "--listen", f"127.0.0.1:{http_port}"],
                                   cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        group = run.pid
        deadline = time.monotonic() + 840
        while get_json(f"http://127.0.0.1:{http_port}/ready")[0] != 200:
            if run.poll() is not None:
                fail(f"run.sh exited {run.returncode} before the daemon was ready", log)
            if time.monotonic() > deadline:
                fail("the daemon was not ready within 14 minutes", log)
            time.sleep(0.5)
        print(f"ready {time.monotonic() - started:.0f} s after run.sh started "
              "(dependencies checked, a Release build, ZooKeeper, a worker ID)")
        status, body = get_json(f"http://127.0.0.1:{http_port}/status")
        if status != 200 or body.get("mode") != "recycle":
            fail(f"not the default config's recycle mode: /status {status} {body}", log)
        with open(log, errors="replace") as f:
            output = f.read()
        if f"conf/recycle.json: OK (recycle via ZooKeeper 127.0.0.1:{zk_port}" not in output:
            fail("check-config did not name the default config and the test's ZooKeeper", log)
        if "log level debug" not in output:
            fail("--log-level debug did not reach the daemon", log)
        if not listening(zk_port):
            fail(f"no ZooKeeper on {zk_port}", log)

        os.killpg(group, signal.SIGINT)  # Ctrl-C
        try:
            code = run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            fail("run.sh still running 60 s after Ctrl-C", log)
        if code != 0:
            fail(f"run.sh exited {code} after Ctrl-C", log)
        with open(log, errors="replace") as f:
            output = f.read()
        if "given back with floor" not in output:
            fail("the daemon did not say it gave its worker ID back", log)
        end = time.monotonic() + 30
        while listening(zk_port):
            if time.monotonic() > end:
                fail(f"the ZooKeeper run.sh started still listens on {zk_port}", log)
            time.sleep(0.2)
        print("run.sh: OK")
    finally:
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for zk_pid in glob.glob(os.path.join(checkout, ".local/zookeeper/*/pid")):
            try:
                os.kill(int(open(zk_pid).read().strip()), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(os.path.abspath(sys.argv[1]))
