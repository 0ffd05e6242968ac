"""What the tests that run docs/operations.md's runbooks as written share: a
block taken out of the doc (scripts/runbook-block.py), the test's failure,
polling with a deadline, and a daemon's JSON over plain HTTP. Debian's
python3 only."""

import http.client
import json
import os
import subprocess
import sys
import time

EXTRACTOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                         "runbook-block.py")


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def poll(what, probe, seconds):
    """probe() until it returns something true, which is returned; a Failure
    naming `what` at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {seconds} s")
        time.sleep(0.05)


def get(port, path):
    """(status, JSON body) of GET path on a daemon's loopback port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def block(doc, name, config):
    """The doc's block NAME, letter for letter but the config's path."""
    out = subprocess.run([sys.executable, EXTRACTOR, "--config", config, name, doc],
                         capture_output=True, text=True, check=False)
    check(out.returncode == 0, f"{doc} has no runbook {name!r} to run: {out.stderr.strip()}")
    return out.stdout
