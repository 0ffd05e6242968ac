#!/usr/bin/python3
"""The client libraries, measured against the plain HTTP call in the same
run: a real cluster (clients/testing/cluster.py: ZooKeeper and one
snowflaked, two for Go's benchmarks), one process asking for IDs one at a
time for --seconds each way, in Python, then in Go (go test -bench), then
in Java (clients/java's Bench, the JIT warmed for a second first):
  remote     Client.id(): one kept-alive HTTP call an ID (the baseline);
  buffered   IdBuffer.next(): fetched ahead in batches of 1000;
  leased     LeasedGenerator.next_id(): made in the process, against the
             layout's limit (4,096,000 a second a worker ID, the default
             layout's 12 sequence bits in 1 ms units).

Usage: clients.py SNOWFLAKED [--seconds S]"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "clients", "python", "src"))

from snowflaked_client import Client, IdBuffer, LeasedGenerator  # noqa: E402

LIMIT = 4_096_000


@contextlib.contextmanager
def one_daemon(snowflaked):
    """A cluster of one daemon (clients/testing/cluster.py): its URLs."""
    harness = subprocess.Popen(
        [sys.executable, os.path.join(TOP, "clients", "testing", "cluster.py"), "--binary",
         snowflaked, "--daemons", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield json.loads(harness.stdout.readline())["servers"]
    finally:
        harness.stdin.close()
        harness.wait(60)


def rate(next_id, seconds):
    count, end = 0, time.monotonic() + seconds
    while True:
        for _ in range(100):
            next_id()
        count += 100
        if time.monotonic() >= end:
            return count / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snowflaked")
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    with one_daemon(args.snowflaked) as servers:
        with Client(servers) as client:
            client.id("warm-up")
            remote = rate(lambda: client.id("bench"), args.seconds)
            with IdBuffer(client, "bench") as buffer:
                buffered = rate(buffer.next, args.seconds)
            with LeasedGenerator(client, "bench") as generator:
                leased = rate(generator.next_id, args.seconds)
    print(f"Python {sys.version.split()[0]}, one thread, {args.seconds:g} s each:")
    print(f"  remote   (baseline)  {remote:12,.0f} IDs/s")
    print(f"  buffered             {buffered:12,.0f} IDs/s  {buffered / remote:8.1f} x remote")
    print(f"  leased               {leased:12,.0f} IDs/s  {leased / remote:8.1f} x remote, "
          f"{leased / LIMIT:.1%} of the layout's limit ({LIMIT:,}/s)")
    go_benchmarks(args)
    java_benchmarks(args)


def java_benchmarks(args):
    """clients/java's Bench: one thread each way, against a cluster of one daemon."""
    out = os.path.join(os.path.dirname(os.path.abspath(args.snowflaked)), "java-bench")
    subprocess.run(["bash", os.path.join(TOP, "clients", "java", "build.sh"), "test-classes"],
                   env=dict(os.environ, OUT=out), check=True, capture_output=True)
    with one_daemon(args.snowflaked) as servers:
        done = subprocess.run(["java", "-cp", f"{out}/classes:{out}/test-classes",
                               "snowflaked.client.Bench", ",".join(servers), f"{args.seconds:g}"],
                              capture_output=True, text=True, timeout=600, check=True)
    remote, buffered, leased = (float(x) for x in done.stdout.split())
    version = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.split('"')[1]
    print(f"Java {version}, one thread, {args.seconds:g} s each:")
    print(f"  remote   (baseline)  {remote:12,.0f} IDs/s")
    print(f"  buffered             {buffered:12,.0f} IDs/s  {buffered / remote:8.1f} x remote")
    print(f"  leased               {leased:12,.0f} IDs/s  {leased / remote:8.1f} x remote, "
          f"{leased / LIMIT:.1%} of the layout's limit ({LIMIT:,}/s)")


def go_benchmarks(args):
    """clients/go's Benchmark{Remote,Buffered,Leased}: one goroutine each."""
    env = dict(os.environ, SNOWFLAKED_BIN=os.path.abspath(args.snowflaked), GOFLAGS="-mod=mod",
               GOPROXY="off")
    done = subprocess.run(["go", "test", "-run", "^$", "-bench", ".", "-benchtime",
                           f"{args.seconds:g}s", "."], cwd=os.path.join(TOP, "clients", "go"),
                          env=env, capture_output=True, text=True, timeout=600)
    rates = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if words and words[0].startswith("Benchmark") and "ns/op" in words:
            rates[words[0].split("-")[0][len("Benchmark"):].lower()] = 1e9 / float(words[2])
    if done.returncode != 0 or len(rates) != 3:
        sys.exit(f"clients.py: go test -bench failed:\n{done.stdout}{done.stderr}")
    remote = rates["remote"]
    version = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.split()[2]
    print(f"Go {version}, one goroutine, {args.seconds:g} s each:")
    print(f"  remote   (baseline)  {remote:12,.0f} IDs/s")
    print(f"  buffered             {rates['buffered']:12,.0f} IDs/s  "
          f"{rates['buffered'] / remote:8.1f} x remote")
    print(f"  leased               {rates['leased']:12,.0f} IDs/s  "
          f"{rates['leased'] / remote:8.1f} x remote, "
          f"{rates['leased'] / LIMIT:.1%} of the layout's limit ({LIMIT:,}/s)")


if __name__ == "__main__":
    main()
