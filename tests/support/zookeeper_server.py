"""A real ZooKeeper server for the Python tests (Debian's `zookeeper`), as
zookeeper_server.hpp starts one for the C++ tests: on a free loopback port,
with a temp data dir, fast ticks, killed with the test however it ends
(setpriv --pdeathsig). pause()/resume() stop and continue it (SIGSTOP):
it answers nothing, and sessions expire."""

import os
import signal
import socket
import subprocess
import time


class ZooKeeperServer:
    def __init__(self, workdir, name="zookeeper"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        data = os.path.join(workdir, name + "-data")
        os.makedirs(data, exist_ok=True)
        config = os.path.join(workdir, name + ".cfg")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"tickTime=100\ndataDir={data}\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok\nminSessionTimeout=200\nmaxSessionTimeout=60000\n")
        self.log = open(os.path.join(workdir, name + ".log"), "w", encoding="utf-8")
        self.process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "/usr/bin/java", "-Xmx256m", "-cp",
             "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", config],
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while not self._answers():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper did not start (log: {self.log.name})")
            time.sleep(0.05)

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

    def pause(self):
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self):
        self.resume()
        self.process.kill()
        self.process.wait(20)
