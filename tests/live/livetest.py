"""What the live tests (a real systemd, real containers) share: steps that
report themselves, waits with deadlines, commands with timeouts, free ports,
a ZooKeeper server on loopback, the cached Debian 12 root both tests boot, and
scratch directories that a later run cleans up if this one was killed.

Debian's python3 and its standard library only.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


class Failure(Exception):
    """A check that did not hold; its text says what was expected and seen."""


def log(text):
    print(text, flush=True)


@contextlib.contextmanager
def step(name):
    """One checked promise: prints "ok" or "FAIL" with its time."""
    started = time.monotonic()
    try:
        yield
    except Exception as e:
        log(f"FAIL  {name} ({time.monotonic() - started:.1f} s): {e}")
        raise
    log(f"ok    {name} ({time.monotonic() - started:.1f} s)")


def check(condition, what):
    if not condition:
        raise Failure(what)


def run(args, check=True, timeout=300, env=None, input=None, cwd=None):
    """Runs a command to completion; its output is returned, not printed."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env,
                              input=input, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise Failure(f"{' '.join(args)}: still running after {timeout} s") from e
    if check and done.returncode != 0:
        raise Failure(f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done


def poll(what, probe, timeout, interval=0.2):
    """Calls probe() until it returns something true; returns that. At the
    deadline, fails naming `what` and the last thing probe() returned."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = probe()
        except Failure as e:
            last = e
        if last and not isinstance(last, Failure):
            return last
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {timeout} s (last: {last!r})")
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=3):
    """(status, body text); status 0 if nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (OSError, urllib.error.URLError) as e:
        return 0, str(e)


def http_json(url, timeout=3):
    status, body = http_get(url, timeout)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, {"body": body}


def dying_with_us(args):
    """The command, killed (SIGKILL) when the process that started it dies,
    even by SIGKILL: nothing a test starts outlives an aborted run."""
    return ["setpriv", "--pdeathsig", "KILL", "--"] + args


# --- scratch directories --------------------------------------------------

SCRATCH_BASE = "/var/tmp/snowflaked-live"


def scratch_dir(kind):
    """A fresh directory for this run, named with our pid so that a later run
    can tell it was left behind by a run that no longer exists."""
    os.makedirs(SCRATCH_BASE, exist_ok=True)
    path = tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=SCRATCH_BASE)
    os.chmod(path, 0o755)
    return path


def stale_scratch_dirs(kind):
    """Scratch dirs of `kind` whose run is gone (killed before cleaning up)."""
    if not os.path.isdir(SCRATCH_BASE):
        return []
    stale = []
    for name in sorted(os.listdir(SCRATCH_BASE)):
        m = re.fullmatch(re.escape(kind) + r"-(\d+)-\w+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            stale.append(os.path.join(SCRATCH_BASE, name))
    return stale


# --- the Debian 12 root ---------------------------------------------------

CACHE_DIR = "/var/cache/snowflaked-tests"
ROOT_PACKAGES = "systemd,systemd-sysv,dbus,curl,ca-certificates"


def debian_mirror():
    """The machine's own Debian mirror (deb822 or one-line sources)."""
    for path in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"] + \
            [os.path.join("/etc/apt/sources.list.d", f)
             for f in sorted(os.listdir("/etc/apt/sources.list.d"))]:
        if not os.path.isfile(path):
            continue
        text = open(path).read()
        for m in re.finditer(r"(?m)^URIs:\s*(\S+)[^\n]*\n(?:[^\n]+\n)*?Suites:\s*([^\n]*)", text):
            if "bookworm" in m.group(2).split():
                return m.group(1)
        for m in re.finditer(r"(?m)^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s", text):
            return m.group(1)
    return "http://deb.debian.org/debian"


def unmount_under(path):
    """Unmounts whatever is mounted at or below path, deepest first.
    debootstrap mounts /proc (and /sys) in its target and unmounts them only
    when it ends well: a killed or failed run leaves them, and removing the
    tree then walks into the host's /proc."""
    prefix = os.path.realpath(path).rstrip("/") + "/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1].replace("\\040", " ") for line in mounts]
    for point in sorted((p for p in points if (p + "/").startswith(prefix)),
                        key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


def remove_debootstrap_dir(work):
    unmount_under(work)
    shutil.rmtree(work, ignore_errors=True)


def debian_root_tarball():
    """A minimal Debian 12 root with systemd (debootstrap --variant=minbase),
    as a tarball cached outside the tree: made once per machine (about a
    minute), reused by every later run. The name carries the package list,
    so a changed list makes a new one."""
    os.makedirs(CACHE_DIR, exist_ok=True)
    key = hashlib.sha256(f"bookworm minbase {ROOT_PACKAGES}".encode()).hexdigest()[:12]
    tarball = os.path.join(CACHE_DIR, f"debian-bookworm-minbase-{key}.tar")
    with open(os.path.join(CACHE_DIR, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once make it once
        # Under the lock, any debootstrap dir is one a killed run left.
        for name in os.listdir(CACHE_DIR):
            if name.startswith("debootstrap-"):
                log(f"      removing {name}, left by a run that was stopped")
                remove_debootstrap_dir(os.path.join(CACHE_DIR, name))
        if os.path.exists(tarball):
            log(f"      Debian 12 root: cached {tarball}")
            return tarball
        mirror = debian_mirror()
        log(f"      Debian 12 root: debootstrap from {mirror} (once per machine)")
        work = tempfile.mkdtemp(prefix="debootstrap-", dir=CACHE_DIR)
        try:
            root = os.path.join(work, "root")
            run(["debootstrap", "--variant=minbase", f"--include={ROOT_PACKAGES}", "bookworm",
                 root, mirror], timeout=900)
            run(["tar", "-C", root, "-cf", tarball + ".part", "."], timeout=300)
            os.rename(tarball + ".part", tarball)
        finally:
            remove_debootstrap_dir(work)
        return tarball


def unpack_root(tarball, into):
    """The cached root, unpacked; its top directory 0755 (DynamicUser= units
    cannot enter a root left 0700 by a temp dir: 200/CHDIR)."""
    os.makedirs(into, exist_ok=True)
    run(["tar", "-C", into, "-xf", tarball], timeout=300)
    os.chmod(into, 0o755)


# --- ZooKeeper on loopback -------------------------------------------------

def zookeeper_command(port, word, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                data = s.recv(4096)
                if not data:
                    return b"".join(chunks).decode()
                chunks.append(data)
    except OSError:
        return ""


class ZooKeeperServer:
    """A standalone server from Debian's zookeeper package on a free
    loopback port with a temp data dir; killed with its parent."""

    def __init__(self, directory):
        self.dir = directory
        self.port = free_port()
        self.process = None
        os.makedirs(os.path.join(directory, "data"), exist_ok=True)
        with open(os.path.join(directory, "zoo.cfg"), "w") as f:
            f.write(f"tickTime=100\ninitLimit=20\nsyncLimit=10\n"
                    f"dataDir={directory}/data\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
                    "minSessionTimeout=200\nmaxSessionTimeout=60000\n")

    def start(self):
        log_file = open(os.path.join(self.dir, "zookeeper.log"), "w")
        self.process = subprocess.Popen(dying_with_us(
            ["java", "-Xmx256m", "-cp",
             "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain",
             os.path.join(self.dir, "zoo.cfg")]), stdout=log_file, stderr=subprocess.STDOUT)
        poll("ZooKeeper serving", lambda: "Mode:" in zookeeper_command(self.port, "srvr"), 60)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def back_up(self):
        """A copy of its data as it is now (stopped for the copy): an operator's backup."""
        backup = os.path.join(self.dir, f"backup-{time.monotonic_ns()}")
        self.stop()
        shutil.copytree(os.path.join(self.dir, "data"), backup)
        self.start()
        return backup

    def restore(self, backup, while_stopped=lambda: None):
        """Killed, its data replaced by a backup, started again; while_stopped
        runs once it is down (docs/operations.md: the fence command starts then)."""
        self.stop()
        while_stopped()
        shutil.rmtree(os.path.join(self.dir, "data"))
        shutil.copytree(backup, os.path.join(self.dir, "data"))
        self.start()

    def hosts(self):
        return f"127.0.0.1:{self.port}"


def main_guard(body):
    """Runs body(); exit 0 if every step held, 1 otherwise. SIGTERM and
    SIGINT unwind through the body's cleanup like a failure."""
    def interrupted(signum, _frame):
        raise Failure(f"interrupted by signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    try:
        body()
    except Failure as e:
        log(f"\n{os.path.basename(sys.argv[0])}: FAILED: {e}")
        sys.exit(1)
    log(f"\n{os.path.basename(sys.argv[0])}: OK")


if __name__ == "__main__":
    # `livetest.py prefetch`: makes the cached Debian root now (scripts/test.sh
    # starts it early, so that its downloads overlap the builds).
    if sys.argv[1:] != ["prefetch"]:
        sys.exit("usage: livetest.py prefetch")
    print(debian_root_tarball())
