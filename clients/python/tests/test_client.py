"""Client: IDs and sequence numbers from a real cluster; failover, refusals,
TLS."""

import os
import random
import threading
import time

import pytest

from snowflaked_client import Client, RequestError, UnavailableError

EPOCH_MS = 1735689600000


def timestamp_ms(snowflake):
    return (snowflake >> 22) + EPOCH_MS


def test_ids_in_every_form(cluster):
    with Client(cluster.servers) as client:
        ids = client.ids("orders", 500)
        assert len(set(ids)) == 500 and ids == sorted(ids)
        assert all(isinstance(i, int) for i in ids)
        now = time.time() * 1000
        assert abs(timestamp_ms(client.id("orders")) - now) < 5000
        uuids = client.ids("orders", 3, form="uuid")
        assert all(isinstance(u, str) and u[14] == "7" for u in uuids)  # RFC 9562 UUIDv7s
        assert len(set(uuids)) == 3
        opaque = client.ids("orders", 100, form="opaque")
        assert len(set(opaque)) == 100 and all(0 <= i < 1 << 63 for i in opaque)
        assert opaque != sorted(opaque)  # a keyed permutation: no order shows
        with pytest.raises(ValueError):
            client.id("orders", form="hex")


def test_bad_requests_are_request_errors_at_once(cluster):
    with Client(cluster.servers, timeout=5) as client:
        started = time.monotonic()
        with pytest.raises(RequestError) as bad:
            client.id("no/such")
        assert bad.value.status == 404 or bad.value.code == "bad_tag"
        with pytest.raises(RequestError) as big:
            client.ids("orders", 1_000_000)
        assert (big.value.status, big.value.code) == (400, "bad_count")
        with pytest.raises(RequestError) as unknown:
            client.next_seq("no-such-sequence")
        assert (unknown.value.status, unknown.value.code) == (404, "unknown_sequence")
        assert time.monotonic() - started < 2  # not retried until the timeout


def test_sequence_numbers_with_a_template(cluster):
    cluster.command("seq create invoice --template INV-{n:06} --start 7")
    with Client(cluster.servers) as client:
        first = client.next_seq("invoice")
        assert first.number >= 7 and first.text == f"INV-{first.number:06d}"
        assert first.period is None
        batch = client.seq("invoice", 3)
        assert [n.text for n in batch] == [f"INV-{n.number:06d}" for n in batch]
        assert len({n.number for n in batch + [first]}) == 4


def test_periodic_numbers_carry_their_period(cluster):
    cluster.command("seq create daily --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}")
    with Client(cluster.servers) as client:
        n = client.next_seq("daily")
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert n.period in (today, time.strftime("%Y-%m-%d", time.gmtime(time.time() - 60)))
        assert n.text == f"D{n.period.replace('-', '')}-{n.number}"


def test_a_killed_replica_is_passed_over(cluster):
    with Client(cluster.servers, timeout=5) as client:
        client.ids("warm", 1)
        cluster.command("kill 0")
        try:
            seen = set()
            for _ in range(50):
                seen.update(client.ids("failover", 10))
            assert len(seen) == 500
        finally:
            cluster.command("start 0")
            cluster.command("ready")


def test_a_frozen_replica_costs_its_share_of_the_time_only(cluster, monkeypatch):
    # The frozen one asked first (the order fixed for this test): it gets
    # half of the 4 s, then the other answers at once.
    monkeypatch.setattr(random, "sample", lambda replicas, k: list(replicas))
    with Client(cluster.servers, timeout=4) as client:
        cluster.command("stop 0")
        try:
            started = time.monotonic()
            assert client.id("frozen") > 0
            assert 1.9 < time.monotonic() - started < 3.0
        finally:
            cluster.command("cont 0")
            cluster.command("ready")


def test_refusals_are_honoured_and_named(cluster):
    # ZooKeeper frozen: both daemons' leases run out (1.5 s), each refuses
    # 503 lease_expired with Retry-After; the client names both, issues nothing.
    with Client(cluster.servers, timeout=1) as client:
        cluster.command("zkstop")
        try:
            def refused():
                try:
                    client.id("refused")
                    return False
                except UnavailableError as e:
                    return set(e.failures.values()) == {"lease_expired"}
            deadline = time.monotonic() + 10
            while not refused():
                assert time.monotonic() < deadline, "never refused lease_expired"
        finally:
            cluster.command("zkcont")
            cluster.command("ready")
    # A client with time enough waits the refusals out and gets its ID.
    with Client(cluster.servers, timeout=20) as client:
        assert client.id("refused") > 0


def test_every_replica_gone_is_unavailable_at_once():
    # As `snowflaked get`: without a 503 there is nothing to wait for.
    with Client(["http://127.0.0.1:1", "http://127.0.0.1:2"], timeout=5) as client:
        started = time.monotonic()
        with pytest.raises(UnavailableError) as e:
            client.id("x")
        assert time.monotonic() - started < 1
        assert set(e.value.failures.values()) == {"connection refused"}


def test_a_stale_kept_alive_connection_is_not_a_failure(cluster):
    # Many idle connections, then the daemons close them (idle timeout or a
    # restart): the next call goes through on a new one.
    with Client(cluster.servers[:1], timeout=2) as client:
        threads = [threading.Thread(target=lambda: client.ids("stale", 50)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cluster.command("kill 0")
        cluster.command("start 0")
        try:
            assert client.id("stale") > 0
        finally:
            cluster.command("ready")


def test_a_forked_child_gets_nothing_of_the_parents(cluster):
    from snowflaked_client import ClosedError, IdBuffer, LeasedGenerator
    with Client(cluster.servers) as client, IdBuffer(client, "fork", batch=10) as buffer, \
            LeasedGenerator(client, "py-fork") as gen:
        buffer.next()
        gen.next_id()
        pid = os.fork()
        if pid == 0:  # the child: its copies refuse; the client makes new connections
            code = 0
            for make in (buffer.next, gen.next_id):
                try:
                    make()
                    code = 1
                except ClosedError:
                    pass
            try:
                code |= 0 if client.id("fork-child") > 0 else 2
            except Exception:  # noqa: BLE001
                code |= 4
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert gen.next_id() > 0 and buffer.next() > 0  # the parent's go on


def test_tls_with_a_ca_file(tls_cluster):
    with Client(tls_cluster.servers, cacert=tls_cluster.cacert) as client:
        assert len(set(client.ids("tls", 100))) == 100
    with Client(tls_cluster.servers, timeout=1) as client:  # the system's CAs: not trusted
        with pytest.raises(UnavailableError) as e:
            client.id("tls")
        assert all("not trusted" in why for why in e.value.failures.values())


def test_one_client_serves_many_threads(cluster):
    with Client(cluster.servers) as client:
        results, errors = [], []

        def work():
            try:
                for _ in range(20):
                    results.extend(client.ids("threads", 5))
            except Exception as e:  # noqa: BLE001 - asserted on the main thread
                errors.append(e)
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(set(results)) == 8 * 20 * 5


def test_servers_from_the_environment(cluster, monkeypatch):
    monkeypatch.setenv("SNOWFLAKED_SERVERS", ",".join(cluster.servers))
    with Client() as client:
        assert client.servers == cluster.servers
        assert client.id("env") > 0
