"""The real snowflaked for the Python tests: started with a config of the
test's own on a port the system picks (--listen 127.0.0.1:0), found by its
"listening on" log line (and its admin listener, if it has one, by the same
line), and killed with the test however the test ends (setpriv --pdeathsig,
as spawn_child.hpp does for the C++ tests)."""

import json
import os
import re
import subprocess
import time

import host_state  # noqa: F401  (never the host's state directory)


class Daemon:
    def __init__(self, binary, config, workdir, name, vouch=True):
        """`config` (a dict) is written to WORKDIR/NAME.json with a state
        directory of its own; the log goes to WORKDIR/NAME.log. A daemon of a
        ZooKeeper mode is started as the documented first start does: after
        `snowflaked cluster create`, which vouches that a cluster the test's
        fresh ZooKeeper does not hold yet is new (else the daemon would
        fence it for a lease); `vouch=False` leaves that out."""
        config.setdefault("coordinator", {})["state_dir"] = os.path.join(workdir, name + "-state")
        self.config_path = os.path.join(workdir, name + ".json")
        with open(self.config_path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        if vouch and config["coordinator"].get("type", "static") in ("recycle", "sequential"):
            # Its exit code is the daemon's business (a config the cluster
            # refuses is refused by the daemon too).
            subprocess.run([binary, "cluster", "create", "--config", self.config_path],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                           check=False)
        self.log = open(os.path.join(workdir, name + ".log"), "w+", encoding="utf-8")
        self.process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", binary, "--config", self.config_path, "--listen",
             "127.0.0.1:0"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        self.port = None
        self.admin_port = None
        while self.port is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"{name} did not start:\n{self.log.read()}")
            self.log.seek(0)
            text = self.log.read()
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                admin = re.search(r"admin listener 127\.0\.0\.1:(\d+)", text)
                self.admin_port = int(admin.group(1)) if admin else None
            else:
                time.sleep(0.05)

    def log_text(self):
        """What the daemon has logged so far."""
        with open(self.log.name, encoding="utf-8") as f:
            return f.read()

    def stop(self):
        self.process.terminate()
        self.process.wait(20)
