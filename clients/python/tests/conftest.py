"""A real cluster for each test module: ZooKeeper and snowflaked daemons
started by clients/testing/cluster.py (the harness the Java and Go tests
drive too), the daemon binary from $SNOWFLAKED_BIN."""

import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

HARNESS = os.path.join(os.path.dirname(__file__), "..", "..", "testing", "cluster.py")


class Cluster:
    def __init__(self, *args):
        binary = os.environ.get("SNOWFLAKED_BIN")
        if not binary:
            pytest.fail("SNOWFLAKED_BIN: the snowflaked binary the tests run")
        self.process = subprocess.Popen(
            [sys.executable, HARNESS, "--binary", binary, *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        info = json.loads(self.process.stdout.readline() or '{"error": "exited"}')
        if "error" in info:
            self.close()
            raise RuntimeError(f"the cluster did not start: {info['error']}")
        self.servers = info["servers"]
        self.cacert = info["cacert"]

    def command(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"{line}: {answer}")

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.write("quit\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
            self.process.wait(60)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster("--daemons", "2")
    yield c
    c.close()


@pytest.fixture(scope="module")
def tls_cluster():
    c = Cluster("--daemons", "2", "--tls")
    yield c
    c.close()


def eventually(probe, timeout, what):
    """Polls probe() until it is true, or fails the test after timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.02)
    pytest.fail(f"{what}: not within {timeout} s")
