"""What the sequence benchmarks share: the real snowflaked on a free
loopback port, on the config a benchmark gives, beside a real ZooKeeper
(tests/support/zookeeper_server.py) in a temporary directory; a tag
created in it, and the daemon's HTTP answers read."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from zookeeper_server import ZooKeeperServer  # noqa: E402,F401  (re-exported for the benchmarks)
import host_state  # noqa: E402,F401  (never the host's state directory)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BenchDaemon:
    """snowflaked started on SETTINGS (JSON config sections) with its listen
    address, log level and state directory filled in; stderr to WORK/d.log."""

    def __init__(self, snowflaked, work, settings, env=None):
        self.snowflaked = snowflaked
        self.env = dict(os.environ, **(env or {}))
        self.port = free_port()
        self.config = os.path.join(work, "snowflaked.json")
        settings = dict(settings)
        settings["coordinator"] = dict(settings.get("coordinator", {}),
                                       state_dir=os.path.join(work, "state"))
        settings["http"] = dict(settings.get("http", {}), listen=f"127.0.0.1:{self.port}")
        settings.setdefault("log_level", "warn")
        with open(self.config, "w", encoding="utf-8") as f:
            json.dump(settings, f)
        with open(os.path.join(work, "d.log"), "w", encoding="utf-8") as log:
            self.process = subprocess.Popen([snowflaked, "--config", self.config],
                                            stdout=subprocess.DEVNULL, stderr=log, env=self.env)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()

    def get_json(self, path, timeout=10):
        return json.loads(self.get(path, timeout)[1])

    def create_tag(self, tag):
        subprocess.run([self.snowflaked, "seq", "create", tag, "--start", "1",
                        "--config", self.config], check=True, stdout=subprocess.DEVNULL)

    def wait_until(self, ready, what, seconds=30):
        """Polls READY() (OSError counts as not yet) until true, or exits naming WHAT."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                if ready():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"{os.path.basename(sys.argv[0])}: {what} within {seconds} s")
            time.sleep(0.1)

    def stop(self, kill=False):
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(30)
