"""IdBuffer and SeqBuffer against a real cluster."""

import time
import urllib.request

import pytest

from snowflaked_client import (Client, IdBuffer, NotBufferableError, RequestError, SeqBuffer,
                               UnavailableError)

from conftest import eventually

EPOCH_MS = 1735689600000


def test_ids_come_from_the_buffer_unique_and_ordered(cluster):
    with Client(cluster.servers) as client, IdBuffer(client, "buffered", batch=200) as buffer:
        ids = [buffer.next() for _ in range(2000)]
        assert len(set(ids)) == 2000
        # Each daemon's rise; across daemons they follow time (not sorted).
        for worker in {(i >> 12) & 1023 for i in ids}:
            theirs = [i for i in ids if (i >> 12) & 1023 == worker]
            assert theirs == sorted(theirs)


def test_no_id_older_than_the_bound_is_handed_out(cluster):
    max_age = 0.2
    with Client(cluster.servers) as client, \
            IdBuffer(client, "aged", batch=1000, low_water=0, max_age=max_age) as buffer:
        ages = []
        # Paced slower than a batch lasts: batches go stale while held.
        for _ in range(60):
            # Its age when next() began: the buffer judges it later, so at
            # most max_age (counted from when its batch was asked for, before
            # the daemon stamped it; the daemons' clocks are this host's),
            # plus the millisecond its stamp is floored to and one for the
            # wall clock's slew. A reading after
            # the call would add whatever a loaded host delays.
            before = time.time() * 1000
            snowflake = buffer.next()
            ages.append(before - ((snowflake >> 22) + EPOCH_MS))
            time.sleep(0.01)
        assert max(ages) <= max_age * 1000 + 2, max(ages)
        assert len(set(ages)) > 1


def test_a_buffer_over_a_bad_tag_raises_the_refusal(cluster):
    with Client(cluster.servers, timeout=0.5) as client, IdBuffer(client, "no/such") as buffer:
        with pytest.raises(RequestError):
            buffer.next()


def test_a_buffer_rides_out_a_refusing_cluster(cluster):
    with Client(cluster.servers, timeout=0.3) as client, \
            IdBuffer(client, "outage", batch=50, max_age=0.2) as buffer:
        assert buffer.next() > 0
        cluster.command("zkstop")
        try:
            deadline = time.monotonic() + 10
            while True:  # the buffered ones age out, then the refusal shows
                try:
                    buffer.next(timeout=0.3)
                except UnavailableError as e:
                    if "lease_expired" in e.failures.values():
                        break
                assert time.monotonic() < deadline
        finally:
            cluster.command("zkcont")
            cluster.command("ready")
        assert buffer.next(timeout=20) > 0


def test_sequence_numbers_buffered_but_never_a_strict_periodic_or_unknown_tags(cluster):
    cluster.command("seq create tickets")
    cluster.command("seq create chat --order strict")
    cluster.command("seq create days --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}")
    with Client(cluster.servers) as client:
        with pytest.raises(NotBufferableError) as unknown:
            SeqBuffer(client, "never-created")
        assert unknown.value.code == "unknown_sequence"
        made = []

        def listed():  # a tag just created is listed by each daemon's next look
            try:
                made.append(SeqBuffer(client, "tickets", batch=20))
                return True
            except NotBufferableError:
                return False
        eventually(listed, 10, "tickets listed")
        with made[0] as buffer:
            numbers = [buffer.next().number for _ in range(100)]
            assert len(set(numbers)) == 100
        for tag, code in (("chat", "strict_sequence"), ("days", "periodic_sequence")):
            def refused():
                try:
                    with SeqBuffer(client, tag) as buffer:  # listed, its kind not known yet:
                        buffer.next()                        # the first batch tells
                    return False
                except NotBufferableError as e:
                    return e.code == code
            eventually(refused, 10, f"{tag} refused {code}")


def test_an_idle_buffer_fetches_nothing(cluster):
    with Client(cluster.servers) as client, \
            IdBuffer(client, "idle", batch=10, low_water=2, max_age=0.05) as buffer:
        buffer.next()
        # The take asks for one refill (its batch for the next take), which
        # goes stale too; then nothing more.
        eventually(lambda: _issued(cluster, "idle") == 20 and not len(buffer), 5,
                   "the refill after the take, gone stale")
        time.sleep(0.5)  # the span over which an idle buffer must not fetch
        assert _issued(cluster, "idle") == 20


def _issued(cluster, tag):
    """IDs of the tag the daemons issued, by their metrics."""
    total = 0
    for server in cluster.servers:
        with urllib.request.urlopen(server + "/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(f'snowflake_tag_ids_issued_total{{tag="{tag}"}}'):
                    total += float(line.split()[-1])
    return total
