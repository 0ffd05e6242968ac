#!/usr/bin/python3
"""What TLS costs a keep-alive client, measured: the real snowflaked twice,
at once, on one io thread each (static worker IDs, no ZooKeeper), one plain
and one with a certificate the openssl command line makes (P-256, as
cert-manager issues by default for ECDSA), and wrk driving GET /id/<tag> on
keep-alive connections at each in turn, ROUNDS times (the machine's speed
drifts from minute to minute: alternate rounds and medians compare like with
like). The handshake is paid once per connection; what is measured is the
record layer's cost per request and answer.

With --baseline BINARY, that snowflaked (another revision's Release build)
is run plain in the same rounds: plain this tree against plain before it
says whether the stream template cost the plain path anything.

Prints req/s, p50/p99 and the server's CPU time per request of each
(medians over the rounds), and the ratios: of the medians, and each round's
own (its runs seconds apart). The CPU time per request is the steadiest
figure on a shared machine.

Usage: tls.py SNOWFLAKED [--baseline BINARY] [--connections N] [--seconds S] [--rounds R]"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_daemon import BenchDaemon

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def certificate(work):
    """A CA and a server certificate for 127.0.0.1 it signs; (cert, key)."""
    def run(*args):
        subprocess.run(args, check=True, cwd=work, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("openssl", "req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=bench CA")
    run("openssl", "req", "-new", *key, "-keyout", "tls.key", "-out", "tls.csr",
        "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "ext.cnf"), "w", encoding="utf-8") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-set_serial", "1", "-days", "2", "-out", "tls.crt", "-extfile", "ext.cnf")
    return os.path.join(work, "tls.crt"), os.path.join(work, "tls.key")


def cpu_seconds(pid):
    """User + system CPU time the process has used so far (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url, connections, seconds, pid):
    before = cpu_seconds(pid)
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    used = cpu_seconds(pid) - before
    if re.search(r"Non-2xx|Socket errors", out):
        sys.exit(f"tls.py: {url}: errors\n{out}")

    def pct(p):
        m = re.search(rf"^\s*{p}%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M)
        return float(m.group(1)) * UNITS[m.group(2)] if m else float("nan")
    rate = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    # The server's CPU per request: what it costs, whatever else the machine
    # runs meanwhile (req/s falls with a busy neighbour; this much less).
    return float(rate.group(1)), pct(50), pct(99), used / int(total.group(1)) * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("snowflaked")
    p.add_argument("--baseline")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        cert, key = certificate(work)
        daemons = {}

        def start(name, binary, worker, http):
            d_work = os.path.join(work, name)
            os.mkdir(d_work)
            daemons[name] = BenchDaemon(binary, d_work, {
                "coordinator": {"type": "static", "static_worker_id": worker},
                "http": dict(http, io_threads=1)})
        start("plain", a.snowflaked, 1, {})
        start("tls", a.snowflaked, 2, {"tls_cert_file": cert, "tls_key_file": key})
        if a.baseline:
            start("baseline", a.baseline, 3, {})
        urls = {name: f"{'https' if name == 'tls' else 'http'}://127.0.0.1:{d.port}/id/order"
                for name, d in daemons.items()}
        try:
            for name, d in daemons.items():
                d.wait_until(lambda u=urls[name]: subprocess.run(
                    ["curl", "-fsSk", "-o", "/dev/null", u]).returncode == 0,
                    f"{name} never answered")
            results = {name: [] for name in daemons}
            pids = {name: d.process.pid for name, d in daemons.items()}
            for name, url in urls.items():
                wrk(url, a.connections, 1, pids[name])  # warm-up
            for r in range(a.rounds):
                # Each round in another order: neither always follows the other.
                order = list(urls) if r % 2 == 0 else list(reversed(urls))
                for name in order:
                    results[name].append(wrk(urls[name], a.connections, a.seconds, pids[name]))
        finally:
            for d in daemons.values():
                d.stop()

    def median(name, i):
        return statistics.median(x[i] for x in results[name])
    print(f"GET /id/order, keep-alive, wrk -t1 -c{a.connections}, {a.seconds} s x "
          f"{a.rounds} rounds alternating, 1 io thread each; medians:")
    for name in results:
        rounds = ", ".join(f"{x[0]:.0f}" for x in results[name])
        print(f"  {name:8} {median(name, 0):10.0f} req/s   p50 {median(name, 1):.3f} ms"
              f"   p99 {median(name, 2):.3f} ms   server CPU {median(name, 3):.2f} us/request"
              f"   (rounds: {rounds})")
    # Each round's own ratio too: its runs are seconds apart, so a machine
    # that slows down between rounds moves both sides of it alike.
    def ratios(a_name, b_name):
        each = [x[0] / y[0] for x, y in zip(results[a_name], results[b_name])]
        return (f"{median(a_name, 0) / median(b_name, 0):.3f} (of the medians); per round "
                f"{', '.join(f'{r:.3f}' for r in each)}, median {statistics.median(each):.3f}")
    print(f"  TLS / plain: {ratios('tls', 'plain')}")
    print(f"  server CPU per request, TLS / plain: {median('tls', 3) / median('plain', 3):.3f}")
    if a.baseline:
        print(f"  plain / baseline plain: {ratios('plain', 'baseline')}")
        print(f"  server CPU per request, plain / baseline plain: "
              f"{median('plain', 3) / median('baseline', 3):.3f}")


if __name__ == "__main__":
    main()
