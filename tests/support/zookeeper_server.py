"""A real ZooKeeper server for the Python tests (Debian's `zookeeper`), as
zookeeper_server.hpp starts one for the C++ tests: on a free loopback port,
with a temp data dir, fast ticks, killed with the test however it ends
(setpriv --pdeathsig). pause()/resume() stop and continue it (SIGSTOP):
it answers nothing, and sessions expire. wipe(), back_up() and restore()
are ZooKeeper losing what it acknowledged, as operators meet it. mntr()
reads its counters (packets, commits, connections), as the benchmarks of
ZooKeeper's cost do. ZooKeeperEnsemble: three of them as one ensemble."""

import os
import shutil
import signal
import socket
import subprocess
import time


class ZooKeeperServer:
    def __init__(self, workdir, name="zookeeper", extra="", heap="256m", tick_ms=100, env=None):
        """`extra`: more zoo.cfg lines (maxClientCnxns=0 for many clients
        on one address, as one host's daemons are); `heap`: the JVM's -Xmx
        (thousands of sessions need more than a test's few); `tick_ms`:
        tickTime, fast for tests (ZooKeeper's own default is 2000); `env`:
        more of its environment (a wall clock of its own, libfaketime's)."""
        self.heap = heap
        self.env = dict(os.environ, **(env or {}))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.workdir = workdir
        self.name = name
        self.data = os.path.join(workdir, name + "-data")
        os.makedirs(self.data, exist_ok=True)
        self.config = os.path.join(workdir, name + ".cfg")
        with open(self.config, "w", encoding="utf-8") as f:
            f.write(f"tickTime={tick_ms}\ndataDir={self.data}\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,mntr,srvr\nminSessionTimeout=200\n"
                    "maxSessionTimeout=60000\n" + extra)
        self.log = open(os.path.join(workdir, name + ".log"), "w", encoding="utf-8")
        self.backups = 0
        self.start()

    def start(self):
        """Starts it (again, on the same port and data); returns once it answers
        (an ensemble's member answers before it has a quorum)."""
        self.process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "/usr/bin/java", f"-Xmx{self.heap}", "-cp",
             "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", self.config],
            stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.monotonic() + 30
        while not self._answers():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper did not start (log: {self.log.name})")
            time.sleep(0.02)

    def wipe(self):
        """Killed, its data emptied, started again (an emptyDir, a new disk)."""
        self.stop()
        shutil.rmtree(self.data)
        os.makedirs(self.data)
        self.start()

    def back_up(self):
        """A copy of its data as it is now (stopped for the copy); returns its path."""
        self.backups += 1
        backup = os.path.join(self.workdir, f"{self.name}-backup{self.backups}")
        self.stop()
        shutil.copytree(self.data, backup)
        self.start()
        return backup

    def restore(self, backup):
        """Killed, its data replaced by a backup, started again."""
        self.stop()
        shutil.rmtree(self.data)
        shutil.copytree(backup, self.data)
        self.start()

    @property
    def hosts(self):
        return f"127.0.0.1:{self.port}"

    def _answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(16) == b"imok"
        except OSError:
            return False

    def _ask(self, word):
        out = b""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(word)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        return out.decode()

    def zxid(self):
        """The last transaction's id (`srvr`): its low 32 bits count the
        writes of this leader's epoch, sessions' creation and end included."""
        try:
            answer = self._ask(b"srvr")
        except OSError:  # starting (or busy): no answer yet
            return None
        for line in answer.splitlines():
            if line.startswith("Zxid: "):
                return int(line[len("Zxid: "):], 16)
        return None

    def mode(self):
        """"leader", "follower" or "standalone" once it serves; None before."""
        try:
            answer = self._ask(b"srvr")
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode: "):
                return line[len("Mode: "):]
        return None

    def mntr(self):
        """Its `mntr` counters, by name (zk_packets_received: ...), numbers
        as numbers; empty while it serves no request yet. The connection
        that asks counts in zk_num_alive_connections."""
        counters = {}
        for line in self._ask(b"mntr").splitlines():
            name, _, value = line.partition("\t")
            try:
                counters[name] = float(value) if "." in value else int(value)
            except ValueError:
                counters[name] = value
        return counters if "zk_packets_received" in counters else {}

    def pause(self):
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)

    def stop(self):
        if self.process.poll() is not None:
            return  # stopped already (a wipe or a restore that failed half-way)
        self.resume()
        self.process.kill()
        self.process.wait(20)


def free_ports(count):
    """`count` distinct loopback ports nobody listens on now (all bound at once)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class ZooKeeperEnsemble:
    """Three servers on loopback as one ensemble (server.N lines, myid
    files), each a ZooKeeperServer with the same `extra`. hosts lists all
    three; mntr() sums the members' counters (each member counts the
    connection that asks); zxid() is the highest member's."""

    def __init__(self, workdir, name="ensemble", extra="", heap="256m", tick_ms=100):
        ports = free_ports(6)
        servers = "".join(f"server.{i + 1}=127.0.0.1:{ports[2 * i]}:{ports[2 * i + 1]}\n"
                          for i in range(3))
        self.members = []
        for i in range(3):
            member = f"{name}{i + 1}"
            data = os.path.join(workdir, member + "-data")
            os.makedirs(data, exist_ok=True)
            with open(os.path.join(data, "myid"), "w", encoding="utf-8") as f:
                f.write(f"{i + 1}\n")
            self.members.append(ZooKeeperServer(
                workdir, member, extra="initLimit=20\nsyncLimit=10\n" + servers + extra,
                heap=heap, tick_ms=tick_ms))
        deadline = time.monotonic() + 60
        while not all(m.mode() for m in self.members):
            if time.monotonic() > deadline:
                raise RuntimeError(f"ZooKeeper ensemble did not form (logs in {workdir})")
            time.sleep(0.05)

    @property
    def hosts(self):
        return ",".join(m.hosts for m in self.members)

    def zxid(self):
        zxids = [z for z in (m.zxid() for m in self.members) if z is not None]
        return max(zxids) if zxids else None

    def mntr(self):
        total = {}
        for m in self.members:
            for name, value in m.mntr().items():
                if isinstance(value, (int, float)):
                    total[name] = total.get(name, 0) + value
        return total

    def stop(self):
        for m in self.members:
            m.stop()
