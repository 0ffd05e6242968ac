#!/usr/bin/python3
"""The chaos runner's lease holder made of this library's LeasedGenerator
(tests/chaos/holders.hpp; `chaos_runner --holder-program`): the arguments
of tests/holders/lease_holder, the same behaviour. It makes IDs in batches
and writes each batch to --out, one ID a line, before it makes the next;
SIGTERM closes the generator (the lease given back with its last stamp)
and exits 0.

  chaos_holder.py --servers PORT[,PORT...] --out FILE [--holder NAME]
                  [--duration-ms N] [--batch N] [--pause-ms N] [--timeout-ms N]
"""

import argparse
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from snowflaked_client import (Client, LeasedGenerator, LeaseExpiredError,  # noqa: E402
                               LeaseLostError, SnowflakedError)

stopping = False


def on_term(*_):
    global stopping
    stopping = True


def pause(seconds):
    # Not time.sleep: under the chaos runner's libfaketime, Python's
    # clock_nanosleep(TIMER_ABSTIME) fails with EINVAL; a lock's timed wait
    # does not go through it.
    threading.Event().wait(seconds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--holder", default="lease-holder")
    parser.add_argument("--duration-ms", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--pause-ms", type=int, default=5)
    parser.add_argument("--timeout-ms", type=int, default=2000)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    servers = [f"http://127.0.0.1:{p}" for p in args.servers.split(",")]
    client = Client(servers, timeout=args.timeout_ms / 1000)
    out = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    generator = None
    while not stopping:
        if generator is None:
            try:
                generator = LeasedGenerator(client, args.holder, duration_ms=args.duration_ms)
                print(f"took worker ID {generator.worker_id}", file=sys.stderr, flush=True)
            except SnowflakedError as e:
                print(f"no lease: {e}", file=sys.stderr, flush=True)
                pause(0.2)
                continue
        batch = []
        try:
            for _ in range(args.batch):
                batch.append(generator.next_id())
        except (LeaseExpiredError, LeaseLostError) as e:
            print(f"no ID: {e}", file=sys.stderr, flush=True)
        if batch:
            os.write(out, "".join(f"{i}\n" for i in batch).encode())
        pause(args.pause_ms / 1000)
    if generator is not None:
        try:
            generator.close()
        except SnowflakedError as e:  # not given back: it runs out by itself
            print(f"give-back: {e}", file=sys.stderr, flush=True)
    os.close(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
