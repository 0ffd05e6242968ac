#!/usr/bin/python3
"""The .deb under a real systemd: a Debian 12 system container booted with
systemd as PID 1 (systemd-nspawn), the package installed with apt as a user
would, and what docs/operations.md promises of the unit checked live: Type=notify
readiness, STATUS=, the watchdog, stop, a bad config, the sandbox, and
priorities in the journal. ZooKeeper runs on the host's loopback, which the
container shares (no private network).

Usage: systemd_test.py DEB OPERATIONS_DOC   (as root; the doc: docs/operations.md)
"""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from livetest import (Failure, ZooKeeperServer, check, debian_root_tarball, dying_with_us,  # noqa: E402
                      free_port, http_json, log, main_guard, poll, run, scratch_dir,
                      stale_scratch_dirs, step, unpack_root)
import test_certificates  # noqa: E402

KIND = "systemd"
UNIT = "snowflaked"
TLS_GROUP = "snowflaked-tls"  # docs/operations.md's group for the TLS key
# Test timings: what takes minutes in production takes seconds here.
WATCHDOG_S = 4
RESTART_S = 1
RECLAIM_AFTER_MS = 4000
HEARTBEAT_MS = 500


class Container:
    """A booted Debian 12 system container; every command runs inside it
    through nsenter into all of its namespaces."""

    def __init__(self, root, name, log_path):
        self.root = root
        self.name = name
        self.log = open(log_path, "w")
        # nspawn, killed with us, takes the container with it: it kills the
        # container's PID 1 when it dies.
        self.nspawn = subprocess.Popen(
            dying_with_us(["systemd-nspawn", "-D", root, "--boot", "--keep-unit", "--register=no",
                           "-M", name, "--console=pipe"]),
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        with open(os.path.join(os.path.dirname(root), "nspawn.pid"), "w") as f:
            f.write(f"{self.nspawn.pid}\n")
        self.init_pid = poll("the container's PID 1", self._find_init, 30)
        # "offline": PID 1 is there but its manager does not answer yet (its
        # bus socket is made a moment later); --wait waits only once it does.
        state = poll("systemctl is-system-running --wait",
                     lambda: (lambda s: None if s in ("", "offline") else s)(
                         self.run(["systemctl", "is-system-running", "--wait"], check=False,
                                  timeout=120).stdout.strip()), 150)
        if state != "running":
            failed = self.run(["systemctl", "--failed", "--no-pager"], check=False).stdout
            raise Failure(f"the container's systemd is {state}:\n{failed}")

    def _find_init(self):
        if self.nspawn.poll() is not None:
            raise Failure(f"systemd-nspawn exited {self.nspawn.returncode}; see {self.log.name}")
        children = []
        for task in os.listdir(f"/proc/{self.nspawn.pid}/task"):
            with open(f"/proc/{self.nspawn.pid}/task/{task}/children") as f:
                children += f.read().split()
        for pid in children:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "systemd":
                    return int(pid)
        return None

    def run(self, args, **kw):
        return run(["nsenter", "-t", str(self.init_pid), "-a"] + args, **kw)

    def spawn(self, args):
        """A command started in the container, not waited for; dies with us."""
        return subprocess.Popen(dying_with_us(["nsenter", "-t", str(self.init_pid), "-a"] + args),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sh(self, script, **kw):
        return self.run(["sh", "-c", script], **kw)

    def write(self, path, text):
        full = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def show(self, *props):
        out = self.run(["systemctl", "show", UNIT] + [f"-p{p}" for p in props]).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, *args):
        return self.journal_of(UNIT, *args)

    def journal_of(self, unit, *args):
        out = self.run(["journalctl", "-u", unit, "-o", "json", "--no-pager"] + list(args)).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def pool(self):
        out = self.run(["snowflaked", "pool", "status", "--config", "/etc/snowflaked/snowflaked.json",
                        "--json"]).stdout
        return json.loads(out)

    def poweroff(self):
        if self.nspawn.poll() is None:
            self.nspawn.terminate()  # nspawn asks the container's systemd to power off
            try:
                self.nspawn.wait(60)
            except subprocess.TimeoutExpired:
                self.nspawn.kill()
                self.nspawn.wait(30)


def clean_stale():
    """What an earlier run that was killed left behind."""
    for path in stale_scratch_dirs(KIND):
        pid_file = os.path.join(path, "nspawn.pid")
        if os.path.exists(pid_file):
            pid = int(open(pid_file).read())
            if os.path.exists(f"/proc/{pid}"):
                os.kill(pid, 9)
        log(f"      removing {path}, left by a run that was killed")
        shutil.rmtree(path, ignore_errors=True)


def daemon_config(zk_hosts, http_port):
    return json.dumps({
        "service": "live",
        "coordinator": {"type": "recycle", "heartbeat_interval_ms": HEARTBEAT_MS,
                        "lease_timeout_ms": 2000, "reclaim_after_ms": RECLAIM_AFTER_MS,
                        "safety_margin_ms": 1000},
        "zookeeper": {"hosts": zk_hosts, "session_timeout_ms": 2000, "connect_timeout_ms": 2000},
        "http": {"listen": f"127.0.0.1:{http_port}"},
    }, indent=2) + "\n"


def worker_of(status_text):
    m = re.match(r"worker ID (\d+) \(recycle\)", status_text)
    return int(m.group(1)) if m else None


def stated_exposure(doc):
    m = re.search(r"`systemd-analyze security` rates it (\d+\.\d+)", open(doc).read())
    if not m:
        raise Failure(f"{doc} states no exposure score (\"`systemd-analyze security` rates it N.N\")")
    return m.group(1)


# The probe runs in the daemon's namespaces as the daemon's user: every
# directory it might write to (mount points, directories anyone may write,
# the system's own) is tried. Printed: "writable DIR" or "refused DIR".
WRITE_PROBE = r"""
{
  awk '{print $5}' /proc/self/mountinfo
  find / \( -path /proc -o -path /sys \) -prune -o -type d \( -perm -0002 -o -user "$(id -u)" \) -print 2>/dev/null
  printf '%s\n' /etc /etc/snowflaked /usr/bin /usr/lib /var/lib /var/log /var/cache /root /home /run /srv /opt
} | grep -v -e '^/proc' -e '^/sys' | sort -u | while read -r dir; do
  [ -d "$dir" ] || continue
  f="$dir/.snowflaked-write-probe"
  if ( : > "$f" ) 2>/dev/null; then rm -f "$f"; echo "writable $dir"; else echo "refused $dir"; fi
done
"""


class Run:
    """What the steps share: the .deb and the doc under test, the scratch
    directory, the booted container, ZooKeeper, and the daemon as found."""

    def __init__(self, deb, doc, work):
        self.deb, self.doc, self.work = deb, doc, work
        self.root = None     # the Debian root the container boots
        self.box = None
        self.zk = None
        self.base = None     # the daemon's URL
        self.worker = None   # the worker ID it took
        self.stopped_at = None
        self.after = None    # the unit's state after the watchdog restart

    def close(self):
        if self.box:
            self.box.poweroff()
        if self.zk:
            self.zk.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def make_root(run):
    root = os.path.join(run.work, "root")
    unpack_root(debian_root_tarball(), root)
    shutil.copy(run.deb, os.path.join(root, "var/tmp", os.path.basename(run.deb)))
    run.root = root


def boot(run):
    run.box = Container(run.root, f"snowflaked-live-{os.getpid()}",
                        os.path.join(run.work, "nspawn.log"))


def install_deb(run):
    box = run.box
    box.sh(f"apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
           f"/var/tmp/{os.path.basename(run.deb)}", timeout=600)
    enabled = box.run(["systemctl", "is-enabled", UNIT], check=False).stdout.strip()
    active = box.run(["systemctl", "is-active", UNIT], check=False).stdout.strip()
    check(enabled == "disabled" and active == "inactive",
          f"after install: is-enabled {enabled}, is-active {active}")


def configure(run):
    """The operator's edit of the conffile, and a drop-in with test timings;
    ZooKeeper is made but not started yet."""
    run.zk = ZooKeeperServer(os.path.join(run.work, "zookeeper"))
    http_port = free_port()
    run.base = f"http://127.0.0.1:{http_port}"
    run.box.write("/etc/snowflaked/snowflaked.json", daemon_config(run.zk.hosts(), http_port))
    run.box.write(f"/etc/systemd/system/{UNIT}.service.d/live-test.conf",
                  f"[Service]\nWatchdogSec={WATCHDOG_S}s\nRestartSec={RESTART_S}s\n")
    run.box.run(["systemctl", "daemon-reload"])


def start_waits_for_ready(run):
    box = run.box
    # ZooKeeper is not up yet: start must still be waiting while the daemon
    # says it has no worker ID.
    start = subprocess.Popen(["nsenter", "-t", str(box.init_pid), "-a",
                              "systemctl", "start", UNIT],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    waiting = poll("the unit activating without a worker ID",
                   lambda: (lambda s: s if s["ActiveState"] == "activating" and
                            s["StatusText"].startswith("no worker ID yet") else None)(
                       box.show("ActiveState", "StatusText")), 30)
    check(start.poll() is None,
          f"systemctl start returned ({start.returncode}) while the unit was {waiting}")
    run.zk.start()
    # The documented first start of a new cluster: vouched for, so the
    # daemon issues without waiting out a new cluster's fence.
    box.run(["snowflaked", "cluster", "create", "--config", "/etc/snowflaked/snowflaked.json"])
    try:
        out, _ = start.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        start.kill()
        raise Failure("systemctl start did not return within 60 s of ZooKeeper starting")
    check(start.returncode == 0, f"systemctl start: exit {start.returncode}: {out}")
    status, ready = http_json(run.base + "/ready")
    check(status == 200, f"/ready right after systemctl start: {status} {ready}")
    state = box.show("StatusText", "MainPID", "ActiveState")
    run.worker = worker_of(state["StatusText"])
    check(run.worker is not None and run.worker == ready.get("worker_id"),
          f"StatusText \"{state['StatusText']}\" vs /ready {ready}")
    log(f"      {state['StatusText']}")


def journal_priorities(run):
    box = run.box
    everything = [e for e in box.journal() if e.get("SYSLOG_IDENTIFIER") == UNIT]
    warnings = [e for e in box.journal("-p", "warning") if e.get("SYSLOG_IDENTIFIER") == UNIT]
    acquired = [e for e in everything if "acquired" in e["MESSAGE"]]
    check(acquired and all(e["PRIORITY"] == "6" for e in acquired),
          f"the 'worker ID acquired' line is not at priority 6 (info): {acquired}")
    # The drop-in's 4 s watchdog is short for these ZooKeeper timeouts: a warning.
    check(any("WatchdogSec=" in e["MESSAGE"] and e["PRIORITY"] == "4" for e in warnings),
          f"the WatchdogSec warning is not in journalctl -p warning: {warnings}")
    check(all(int(e["PRIORITY"]) <= 4 for e in warnings), f"-p warning shows {warnings}")
    check(not any("acquired" in e["MESSAGE"] for e in warnings),
          "an info line is in journalctl -p warning")
    check(all(not re.match(r"<\d>|\d{4}-\d\d-\d\dT", e["MESSAGE"]) for e in everything),
          "a line reached the journal with its priority prefix or a timestamp of its own")


def exposure_score(run):
    stated = stated_exposure(run.doc)
    out = run.box.run(["systemd-analyze", "security", UNIT, "--no-pager"]).stdout
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", out)
    check(m and m.group(1) == stated,
          f"{run.doc} states {stated}; live: {m.group(1) if m else out[-300:]}")
    log(f"      exposure {m.group(1)}")


def writes_only_its_state(run):
    box = run.box
    pid = box.show("MainPID")["MainPID"]
    uid = box.sh(f"awk '/^Uid:/{{print $2}}' /proc/{pid}/status").stdout.strip()
    gid = box.sh(f"awk '/^Gid:/{{print $2}}' /proc/{pid}/status").stdout.strip()
    check(uid != "0", f"the daemon runs as uid {uid}")
    probe = box.run(["nsenter", "-t", pid, "-a", "-S", uid, "-G", gid, "sh", "-c", WRITE_PROBE],
                    timeout=120).stdout.split("\n")
    writable = sorted(line.split(" ", 1)[1] for line in probe if line.startswith("writable "))
    tried = {line.split(" ", 1)[1] for line in probe if line.startswith(("writable ", "refused "))}
    # Where anyone may write by default, and the system's own places.
    expected = {"/etc", "/usr/bin", "/var/lib", "/var/log", "/run", "/run/lock", "/tmp",
                "/var/tmp", "/dev/shm"}
    check(expected <= tried, f"the probe did not try {sorted(expected - tried)}")
    allowed = {"/var/lib/private/snowflaked", "/var/lib/snowflaked"}
    check("/var/lib/private/snowflaked" in writable,
          f"the probe could not write even the state directory: {writable}")
    check(set(writable) <= allowed, f"writable outside the state directory: "
                                    f"{sorted(set(writable) - allowed)}")
    log(f"      {len(tried)} directories tried as uid {uid}; writable: {', '.join(writable)}")


def watchdog_restart(run):
    box = run.box
    before = box.show("MainPID", "NRestarts")
    run.stopped_at = time.monotonic()
    box.sh(f"kill -STOP {before['MainPID']}")
    after = poll("restarted and ready", lambda: (
        lambda s: s if s["MainPID"] not in ("0", before["MainPID"]) and
        s["ActiveState"] == "active" and http_json(run.base + "/ready")[0] == 200 else None)(
            box.show("MainPID", "NRestarts", "ActiveState", "StatusText")), 60)
    took = time.monotonic() - run.stopped_at
    check(int(after["NRestarts"]) == int(before["NRestarts"]) + 1,
          f"NRestarts {before['NRestarts']} -> {after['NRestarts']}")
    check(any("Watchdog timeout" in e["MESSAGE"] for e in box.journal()),
          "no 'Watchdog timeout' in the unit's journal")
    # The restart proves its predecessor dead (same boot, same state
    # directory, lock free) and takes its own worker ID back.
    check(worker_of(after["StatusText"]) == run.worker,
          f"worker ID {run.worker} before, \"{after['StatusText']}\" after")
    log(f"      ready again {took:.1f} s after SIGSTOP: {after['StatusText']}")
    run.after = after


def dead_run_reclaimed(run):
    new_pid = int(run.after["MainPID"])
    limit = RECLAIM_AFTER_MS / 1000 + 2 * HEARTBEAT_MS / 1000 + 3
    held = poll("only the new run holds worker IDs",
                lambda: (lambda p: p if all(e["owner"]["pid"] == new_pid for e in p["inuse"])
                         else None)(run.box.pool()),
                max(1.0, limit - (time.monotonic() - run.stopped_at)))
    check([e["worker_id"] for e in held["inuse"]] == [run.worker], f"in use: {held['inuse']}")


RUNBOOK_BLOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                             "runbook-block.py")
FENCE_UNIT = "snowflaked-fence"  # the unit docs/operations.md's `restore` block names


def runbook(doc, name, config=None):
    """The doc's block NAME (scripts/runbook-block.py), letter for letter but
    `config`, split where the operator restores ZooKeeper: its one comment
    line that says so."""
    text = run([sys.executable, RUNBOOK_BLOCK] + (["--config", config] if config else [])
               + [name, doc]).stdout
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines)
          if line.startswith("#") and "restore zookeeper" in line.lower()]
    check(len(at) == 1, f"runbook {name!r}: not one comment line that says \"Restore ZooKeeper\":\n{text}")
    return "".join(lines[:at[0]]), "".join(lines[at[0]:])


def typed_runbook(run, backup, block, hang_up=False):
    """The block typed into bash in the container, as an operator does: its
    first step with ZooKeeper stopped (once the unit runs), the backup put
    back and ZooKeeper started at its restore step, then the rest. Returns
    bash's exit status and what it printed; `hang_up`: the shell's session
    sent SIGHUP while the command waits for ZooKeeper (a dropped SSH
    connection), nothing more typed, and None returned."""
    first, rest = block
    shell = []

    def first_step():
        p = subprocess.Popen(dying_with_us(["nsenter", "-t", str(run.box.init_pid), "-a", "bash", "-s"]),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
        shell.append(p)
        p.stdin.write(first)
        p.stdin.flush()
        poll(f"the block's first step runs {FENCE_UNIT}",
             lambda: run.box.run(["systemctl", "is-active", FENCE_UNIT], check=False).stdout.strip()
             == "active", 30)
        time.sleep(0.5)  # trying to reach ZooKeeper meanwhile
        if hang_up:
            os.killpg(p.pid, signal.SIGHUP)
            p.wait(30)
            check(run.box.run(["systemctl", "is-active", FENCE_UNIT], check=False).stdout.strip()
                  == "active", f"{FENCE_UNIT} ended with the shell's hangup")

    try:
        run.zk.restore(backup, while_stopped=first_step)
        if hang_up:
            return None, ""
        try:
            out, _ = shell[0].communicate(rest, timeout=120)
        except subprocess.TimeoutExpired as e:
            raise Failure("the runbook: still running 120 s after ZooKeeper's return") from e
        return shell[0].returncode, out
    finally:
        if shell and shell[0].poll() is None:
            os.killpg(shell[0].pid, signal.SIGKILL)
            shell[0].wait()


def fence_journal(run, since):
    return "\n".join(e["MESSAGE"] for e in run.box.journal_of(FENCE_UNIT, "--since", since)
                     if isinstance(e.get("MESSAGE"), str))


def restore_runbook(run):
    """docs/operations.md's restore runbook (its `restore` block: the command
    as a transient unit, systemd-run --wait), typed into bash as an operator
    does: the service serves, ZooKeeper is stopped and the block's first
    step typed, the data restored from a backup taken a moment before and
    ZooKeeper started, the rest typed. The block exits 0; the daemon
    refuses (503 cluster_fenced) until the fence has passed, then issues
    again, above it, and no ID repeats. Then twice more: the shell hung up
    while the command waits (the unit goes on, and its journal says how it
    ended), and a config the cluster contradicts (the block exits 3)."""
    box = run.box
    box.write("/etc/snowflaked/snowflaked.json",
              daemon_config(run.zk.hosts(), int(run.base.rsplit(":", 1)[1])))
    box.run(["systemctl", "start", UNIT], timeout=60)
    ids = []

    def issue(count=20):
        status, body = http_json(run.base + f"/id/order?count={count}")
        if status == 200:
            ids.extend(int(i) for i in body["ids"])
        return status, body

    def backup_under_load():
        poll("issuing before the backup", lambda: issue()[0] == 200, 60)
        backup = run.zk.back_up()
        poll("issuing after the backup", lambda: issue()[0] == 200, 60)
        for _ in range(50):
            issue()
        return backup

    since = box.run(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    status, out = typed_runbook(run, backup_under_load(), runbook(run.doc, "restore"))
    said = fence_journal(run, since)
    check(status == 0, f"the runbook: exit {status}: {out}\njournalctl -u {FENCE_UNIT}:\n{said}")
    check("Finished with result: success" in out, f"systemd-run --wait said: {out}")
    check("fenced until" in said and "confirmed: every daemon" in said,
          f"journalctl -u {FENCE_UNIT}:\n{said}")
    status, body = issue()
    check(status == 503 and body.get("error") == "cluster_fenced", f"/id right after the fence: {status} {body}")
    _, state = http_json(run.base + "/status")
    until = state["cluster"]["fence"]["until_ms"]
    poll("issuing again after the fence", lambda: issue()[0] == 200, 120)
    check(len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} IDs issued twice")
    after = [i for i in ids if (i >> 22) + 1735689600000 > until]
    check(after, "no ID above the fence")
    log(f"      {len(ids)} IDs, none twice; fenced until {state['cluster']['fence']['until']}")

    # The shell hung up while the command waits for ZooKeeper: it goes on.
    since = box.run(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    typed_runbook(run, backup_under_load(), runbook(run.doc, "restore"), hang_up=True)
    poll(f"{FENCE_UNIT} ends after the hangup",
         lambda: box.run(["systemctl", "is-active", FENCE_UNIT], check=False).stdout.strip()
         != "active", 120)
    said = fence_journal(run, since)
    check("confirmed: every daemon" in said and "Deactivated successfully" in said,
          f"after the hangup, journalctl -u {FENCE_UNIT}:\n{said}")
    poll("issuing again after the second fence", lambda: issue()[0] == 200, 120)

    # A fence that fails: the block exits with the command's status.
    other = json.loads(daemon_config(run.zk.hosts(), free_port()))
    other["layout"] = {"worker_bits": 8, "sequence_bits": 14}
    box.write("/etc/snowflaked/another-layout.json", json.dumps(other))
    status, out = typed_runbook(run, backup_under_load(),
                                runbook(run.doc, "restore", "/etc/snowflaked/another-layout.json"))
    check(status == 3, f"the runbook with a config the cluster contradicts: exit {status} "
          f"(cluster fence exits 3): {out}")
    box.run(["rm", "/etc/snowflaked/another-layout.json"])
    check(len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} IDs issued twice")
    box.run(["systemctl", "stop", UNIT], timeout=60)


def stop_gives_worker_back(run):
    box = run.box
    box.run(["systemctl", "stop", UNIT], timeout=60)
    state = box.show("ActiveState", "Result", "ExecMainStatus")
    check(state["ActiveState"] == "inactive" and state["Result"] == "success",
          f"after stop: {state}")
    pool = box.pool()
    check(not pool["inuse"] and any(e["worker_id"] == run.worker for e in pool["notuse"]),
          f"worker ID {run.worker} is not free: in use {pool['inuse']}")


def credential_auth(run):
    """zookeeper.auth_file from a systemd credential: a file only root may
    read, handed to the DynamicUser= daemon by LoadCredential=; the config
    names it relatively, and it is read from $CREDENTIALS_DIRECTORY."""
    box = run.box
    secret = "snowflaked:s3cret-live"
    box.write("/etc/snowflaked/zookeeper-auth", secret + "\n")
    box.run(["chmod", "0600", "/etc/snowflaked/zookeeper-auth"])
    box.write(f"/etc/systemd/system/{UNIT}.service.d/credential.conf",
              "[Service]\nLoadCredential=zookeeper-auth:/etc/snowflaked/zookeeper-auth\n")
    config = json.loads(daemon_config(run.zk.hosts(), int(run.base.rsplit(":", 1)[1])))
    config["zookeeper"]["auth_file"] = "zookeeper-auth"
    box.write("/etc/snowflaked/snowflaked.json", json.dumps(config))
    box.run(["systemctl", "daemon-reload"])
    since = box.run(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    started = box.run(["systemctl", "start", UNIT], check=False, timeout=60)
    check(started.returncode == 0, f"systemctl start with a credential: exit {started.returncode}: "
          f"{[e['MESSAGE'] for e in box.journal('-p', 'err', '--since', since)]}")
    status, ready = http_json(run.base + "/ready")
    check(status == 200, f"/ready with the credential's identity: {status} {ready}")
    # The daemon itself could not have read the file: only root may.
    probe = box.run(["systemd-run", "--wait", "--pipe", "-p", "DynamicUser=yes", "cat",
                     "/etc/snowflaked/zookeeper-auth"], check=False)
    check(probe.returncode != 0, "a DynamicUser= process read the root-only file itself")
    logged = " ".join(e["MESSAGE"] for e in box.journal("--since", since))
    check("s3cret" not in logged, "the password is in the journal")
    box.run(["systemctl", "stop", UNIT], timeout=60)
    box.run(["rm", f"/etc/systemd/system/{UNIT}.service.d/credential.conf"])
    box.run(["systemctl", "daemon-reload"])


def tls_renewed_without_restart(run):
    """TLS under the unit, renewed without a restart, as docs/operations.md
    says: the key readable by a group of its own that a drop-in gives the
    DynamicUser= daemon (SupplementaryGroups=), where a credential
    (LoadCredential=) is copied once at start. A renewal renamed over the
    files is served within two reload intervals by the same process."""
    box = run.box
    work = os.path.join(run.work, "tls")
    os.makedirs(work, exist_ok=True)
    port = int(run.base.rsplit(":", 1)[1])
    first = test_certificates.server_certificate(work, ips=["127.0.0.1"], serial=4001)
    box.run(["groupadd", "--system", TLS_GROUP])
    box.run(["install", "-d", "-m", "0750", "-g", TLS_GROUP, "/etc/snowflaked/tls"])

    def put(suffix, files):
        for name, mode in (("tls.crt", "0644"), ("tls.key", "0640")):
            box.write(f"/etc/snowflaked/tls/{name}{suffix}", files[name])
            box.run(["chgrp", TLS_GROUP, f"/etc/snowflaked/tls/{name}{suffix}"])
            box.run(["chmod", mode, f"/etc/snowflaked/tls/{name}{suffix}"])
    put("", first)
    box.write(f"/etc/systemd/system/{UNIT}.service.d/tls-group.conf",
              f"[Service]\nSupplementaryGroups={TLS_GROUP}\n")
    config = json.loads(daemon_config(run.zk.hosts(), port))
    config["http"].update({"tls_cert_file": "/etc/snowflaked/tls/tls.crt",
                           "tls_key_file": "/etc/snowflaked/tls/tls.key",
                           "tls_reload_interval_ms": 500})
    box.write("/etc/snowflaked/snowflaked.json", json.dumps(config))
    box.run(["systemctl", "daemon-reload"])
    box.run(["systemctl", "start", UNIT], timeout=60)
    ca_file = os.path.join(work, "ca.crt")

    def served_serial():
        context = ssl.create_default_context(cafile=ca_file)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=3) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return int(tls.getpeercert()["serialNumber"], 16)
        except OSError:
            return None
    check(served_serial() == 4001, f"the daemon serves {served_serial()}, not the key's certificate")
    pid = box.show("MainPID")["MainPID"]
    # The files can be read only by root and the group: not by another
    # DynamicUser= process.
    other = box.run(["systemd-run", "--wait", "--pipe", "-p", "DynamicUser=yes", "cat",
                     "/etc/snowflaked/tls/tls.key"], check=False)
    check(other.returncode != 0 and "Permission denied" in other.stdout + other.stderr,
          f"a DynamicUser= process without the group: {other.returncode} {other.stderr}")
    put(".new", test_certificates.server_certificate(work, ips=["127.0.0.1"], serial=4002))
    box.run(["mv", "/etc/snowflaked/tls/tls.key.new", "/etc/snowflaked/tls/tls.key"])
    box.run(["mv", "/etc/snowflaked/tls/tls.crt.new", "/etc/snowflaked/tls/tls.crt"])
    poll("the renewed certificate served", lambda: served_serial() == 4002, 15)
    check(box.show("MainPID")["MainPID"] == pid, "the daemon was restarted to serve the renewal")
    box.run(["systemctl", "stop", UNIT], timeout=60)
    box.run(["rm", f"/etc/systemd/system/{UNIT}.service.d/tls-group.conf"])
    box.write("/etc/snowflaked/snowflaked.json", daemon_config(run.zk.hosts(), port))
    box.run(["systemctl", "daemon-reload"])


def fails_for_good(run, config, status, names):
    """Starts the unit on `config`: it must fail with exit `status`, say
    `names` in `journalctl -p err`, and not be restarted."""
    box = run.box
    box.write("/etc/snowflaked/snowflaked.json", config)
    restarts = int(box.show("NRestarts")["NRestarts"])
    since = box.run(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    started = box.run(["systemctl", "start", UNIT], check=False, timeout=60)
    check(started.returncode != 0, f"systemctl start succeeded (expected exit {status})")
    state = box.show("ActiveState", "Result", "ExecMainStatus")
    check(state == {"ActiveState": "failed", "Result": "exit-code", "ExecMainStatus": str(status)},
          f"expected exit {status}: {state}")
    errors = [e["MESSAGE"] for e in box.journal("-p", "err", "--since", since)
              if e.get("SYSLOG_IDENTIFIER") == UNIT]
    check(any(names in m for m in errors), f"journalctl -p err does not say {names!r}: {errors}")
    # Restart= would act within RestartSec: watch three times as long.
    deadline = time.monotonic() + 3 * RESTART_S + 1
    while time.monotonic() < deadline:
        now = box.show("ActiveState", "NRestarts")
        check(now["ActiveState"] == "failed" and int(now["NRestarts"]) == restarts,
              f"restarted after exit {status}: {now}")
        time.sleep(0.2)
    box.run(["systemctl", "reset-failed", UNIT])


def bad_config_not_restarted(run):
    fails_for_good(run, '{"coordinator": {"typo": 1}}\n', 2, "coordinator.typo: unknown key")


def conflict_not_restarted(run):
    """A config the cluster's root contradicts (another layout on the root the
    earlier runs made): exit 3, which no restart can cure."""
    config = json.loads(daemon_config(run.zk.hosts(), free_port()))
    config["layout"] = {"worker_bits": 8, "sequence_bits": 14}
    fails_for_good(run, json.dumps(config), 3, "worker_bits 8, sequence_bits 14")


STEPS = [
    ("a Debian 12 root with systemd", make_root),
    ("boot it with systemd as PID 1 (systemd-nspawn)", boot),
    ("apt installs the .deb; the service is neither enabled nor started", install_deb),
    ("the operator's config, and a drop-in with test timings", configure),
    ("systemctl start returns only once the daemon is ready (Type=notify)", start_waits_for_ready),
    ("journalctl -p warning shows the daemon's warnings and no info line", journal_priorities),
    ("the exposure score is the one docs/operations.md states, in the live system",
     exposure_score),
    ("the running daemon cannot write outside its state directory", writes_only_its_state),
    (f"watchdog: a SIGSTOPped daemon is killed after WatchdogSec={WATCHDOG_S}s "
     f"and restarted with its worker ID", watchdog_restart),
    ("no worker ID stays held by the dead run beyond reclaim_after", dead_run_reclaimed),
    ("systemctl stop: exit 0, inactive (not failed), the worker ID back in the pool",
     stop_gives_worker_back),
    ("zookeeper.auth_file from a systemd credential (LoadCredential=, $CREDENTIALS_DIRECTORY)",
     credential_auth),
    ("TLS renewed without a restart: the key readable by a group the drop-in gives "
     "(SupplementaryGroups=), the renewal renamed over it served by the same process",
     tls_renewed_without_restart),
    ("a bad config: exit status 2, failed, not restarted", bad_config_not_restarted),
    ("a config the cluster contradicts (another layout): exit status 3, failed, not restarted",
     conflict_not_restarted),
    ("the restore runbook: ZooKeeper restored from a backup under the running service, "
     "snowflaked cluster fence, no ID twice", restore_runbook),
]


def main(deb, doc):
    clean_stale()
    run = Run(deb, doc, scratch_dir(KIND))
    try:
        for title, action in STEPS:
            with step(title):
                action(run)
    finally:
        run.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main_guard(lambda: main(sys.argv[1], sys.argv[2]))
