"""LeasedGenerator against a real cluster: the holder's side of the lease
contract (docs/api.md)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from snowflaked_client import (Client, Layout, LeasedGenerator,
                               LeaseLostError)

from conftest import eventually

# A named pool of two worker IDs: a test sees who gets which.
TWO = Layout(time_bits=41, worker_bits=1, sequence_bits=12)


def decode(snowflake, layout):
    s = layout.shifts()
    unit = snowflake >> s["time"]
    worker = (snowflake >> s["worker"]) & ((1 << layout.worker_bits) - 1)
    return layout.unit_start(unit), worker


def test_ids_unique_rising_and_in_the_clusters_id_space(cluster):
    with Client(cluster.servers) as client, LeasedGenerator(client, "py-test") as gen:
        assert gen.layout.worker_bits == 10
        ids = [gen.next_id() for _ in range(20000)]
        assert len(set(ids)) == len(ids) and ids == sorted(ids)
        assert {decode(i, gen.layout)[1] for i in ids} == {gen.worker_id}
        # The daemons' IDs never equal ours: another worker ID, one space.
        theirs = client.ids("mixed", 1000)
        assert not set(theirs) & set(ids)
        assert {decode(i, gen.layout)[1] for i in theirs}.isdisjoint({gen.worker_id})


def test_renewed_through_a_killed_daemon(cluster):
    with Client(cluster.servers, timeout=1) as client, \
            LeasedGenerator(client, "py-renew", duration_ms=1500) as gen:
        worker = gen.worker_id
        cluster.command("kill 0")
        try:
            started = time.monotonic()
            # Three leases long, paced: an ID a millisecond (a loop at full
            # speed would take a core from the daemons that renew it).
            while time.monotonic() - started < 4.5:
                assert gen.next_id() > 0
                time.sleep(0.001)
            assert gen.worker_id == worker  # renewed, never replaced
        finally:
            cluster.command("start 0")
            cluster.command("ready")


def test_given_back_on_close_the_next_holder_starts_right_above(cluster):
    with Client(cluster.servers) as client, \
            LeasedGenerator(client, "py-other", pool="two", layout=TWO):
        with LeasedGenerator(client, "py-first", pool="two", layout=TWO) as first:
            ids = [first.next_id() for _ in range(5000)]
            worker = first.worker_id
        last_ms = decode(ids[-1], TWO)[0]
        # The only free worker ID: the one given back, with its last stamp:
        # the next holder starts right above it (a named pool's first
        # timestamp is a whole second: it does not know the pool's unit),
        # not at the lease's fence (a whole lease ahead).
        with LeasedGenerator(client, "py-next", pool="two", layout=TWO) as following:
            assert following.worker_id == worker
            first_ms = TWO.unit_start(following._grant.first_unit)  # pylint: disable=protected-access
            assert first_ms == (last_ms // 1000 + 1) * 1000
            assert decode(following.next_id(), TWO)[0] >= first_ms


def test_a_lost_lease_is_replaced(cluster):
    with Client(cluster.servers) as client, \
            LeasedGenerator(client, "py-lost", duration_ms=1500) as gen:
        before = [gen.next_id() for _ in range(100)]
        old = gen.worker_id
        old_token = gen._grant.token  # pylint: disable=protected-access
        cluster.command(f"cli lease forget {old}")
        seen_lost = []

        def replaced():
            try:
                gen.next_id()
            except LeaseLostError:
                seen_lost.append(True)
                return False
            return gen._grant.token != old_token  # pylint: disable=protected-access
        eventually(replaced, 10, "a new lease in place of the forgotten one")
        after = [gen.next_id() for _ in range(100)]
        assert not set(before) & set(after)


HOLDER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from snowflaked_client import Client, Layout, LeasedGenerator, SnowflakedError
layout = Layout(time_bits=41, worker_bits=1, sequence_bits=12)
gen = LeasedGenerator(Client(sys.argv[2].split(",")), "py-frozen", pool="two", layout=layout,
                      duration_ms=1000)
print("worker", gen.worker_id, flush=True)
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        print("id", gen.next_id(), flush=True)
    except SnowflakedError as e:
        print("refused", type(e).__name__, flush=True)
    time.sleep(0.001)
"""


def test_frozen_past_its_lease_it_never_reuses_the_worker_id(cluster, tmp_path):
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    with Client(cluster.servers) as client:
        keeper = LeasedGenerator(client, "py-keeper", pool="two", layout=TWO)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, src, ",".join(cluster.servers),
                                   "12"], stdout=subprocess.PIPE, text=True)
        try:
            line = holder.stdout.readline().split()
            assert line[0] == "worker"
            worker = int(line[1])
            assert holder.stdout.readline().startswith("id")
            holder.send_signal(signal.SIGSTOP)
            # Past its lease and the reclaim, its worker ID goes to another.
            taken = []

            def reclaimed():
                try:
                    g = LeasedGenerator(client, "py-after", pool="two", layout=TWO)
                except Exception:  # noqa: BLE001 - pool_exhausted until reclaimed
                    return False
                taken.append(g)
                return True
            eventually(reclaimed, 20, "the frozen holder's worker ID reclaimed")
            after = taken[0]
            assert after.worker_id == worker
            theirs = [after.next_id() for _ in range(3000)]
            holder.send_signal(signal.SIGCONT)
            out, _ = holder.communicate(timeout=30)
        finally:
            if holder.poll() is None:
                holder.kill()
        lines = [l for l in out.split("\n") if l]
        # Thawed, it refuses (its own deadline passed), then goes on under a
        # new lease: never an ID the new holder's range could make. (IDs
        # printed before the SIGSTOP took may come first.)
        assert any(l.startswith("refused") for l in lines)
        ours = [int(l.split()[1]) for l in lines if l.startswith("id")]
        assert not set(ours) & set(theirs)
        for snowflake in ours:
            ms, w = decode(snowflake, TWO)
            assert w != worker or ms < decode(theirs[0], TWO)[0]
        after.close()
        keeper.close()


STEPPED = r"""
import sys, threading
sys.path.insert(0, sys.argv[1])
from snowflaked_client import Client, LeasedGenerator, SnowflakedError
gen = LeasedGenerator(Client(sys.argv[2].split(",")), "py-stepped")
print("worker", gen.worker_id, flush=True)
while sys.stdin.readline():  # one line: make 200 IDs (or say why not)
    out = []
    for _ in range(200):
        try:
            out.append(str(gen.next_id()))
        except SnowflakedError as e:
            out.append("refused " + type(e).__name__ + " " + str(e).replace(" ", "_"))
            break
    print(" ".join(out), flush=True)
gen.close()
"""

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"  # Debian's libfaketime, amd64


def test_a_clock_stepped_back_is_waited_out_or_refused(cluster, tmp_path):
    """The holder's wall clock stepped back (libfaketime): by less than
    max_backward_wait the generator waits and its IDs keep rising; by more
    it refuses until the clock is past its last stamp again."""
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    offset = tmp_path / "offset"
    offset.write_text("+0\n")
    env = dict(os.environ, LD_PRELOAD=FAKETIME, FAKETIME_DONT_FAKE_MONOTONIC="1",
               FAKETIME_TIMESTAMP_FILE=str(offset), FAKETIME_NO_CACHE="1")
    holder = subprocess.Popen([sys.executable, "-c", STEPPED, src, ",".join(cluster.servers)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def batch():
        holder.stdin.write("go\n")
        holder.stdin.flush()
        return holder.stdout.readline().split()
    try:
        assert holder.stdout.readline().startswith("worker")
        made = [int(i) for i in batch()]
        offset.write_text("-0.3\n")  # back 300 ms: waited out
        after = batch()
        assert "refused" not in after
        made += [int(i) for i in after]
        offset.write_text("-3.3\n")  # back 3 s more: refused, not waited
        refused = batch()
        assert refused[0] == "refused" and refused[1] == "LeaseExpiredError"
        def rising_again():
            got = batch()
            if got[0] == "refused":
                return False
            made.extend(int(i) for i in got if i != "refused")
            return True
        eventually(rising_again, 10, "IDs again once the clock is past the last stamp")
        assert made == sorted(made) and len(set(made)) == len(made)
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_a_named_pools_own_layout_in_sonyflakes_shape(cluster):
    """Sonyflake's shape: 39 bits of 10 ms units, then 8 of sequence, then
    the machine ID (here 4 bits: a small pool is made at once), since
    2014-09-01."""
    sony = Layout(time_bits=39, sequence_bits=8, worker_bits=4, order="time,sequence,worker",
                  time_unit_ms=10, epoch_ms=1409529600000)
    with Client(cluster.servers) as client, \
            LeasedGenerator(client, "py-sony", pool="sony4", layout=sony) as gen:
        ids = [gen.next_id() for _ in range(1000)]
        assert ids == sorted(ids) and len(set(ids)) == 1000
        assert {i & 0xF for i in ids} == {gen.worker_id}
        units = {}
        for i in ids:  # each 10 ms unit's sequence runs 0, 1, ... (at most 255)
            units.setdefault(i >> 12, []).append((i >> 4) & 0xFF)
        assert all(seqs == list(range(len(seqs))) for seqs in units.values())
        ms = (ids[-1] >> 12) * 10 + 1409529600000
        assert abs(ms - time.time() * 1000) < 5000
    with pytest.raises(ValueError, match="needs its layout"):
        LeasedGenerator(Client(cluster.servers), "x", pool="sony4")
    with pytest.raises(ValueError, match="only it takes one"):
        LeasedGenerator(Client(cluster.servers), "x", layout=sony)
