"""IDs and sequence numbers from the service: a list of replicas asked as
`snowflaked get` asks them (docs/api.md#from-shell-scripts-snowflaked-get): in a random
order, the next one at once on a 503 or a connection that fails, each given
its share of the time left; when replicas said 503, again after the
shortest Retry-After; all within the client's timeout."""

import http.client
import json
import os
import random
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from .errors import ClosedError, RequestError, UnavailableError
from .forking import forget_in_child

DEFAULT_SERVER = "http://127.0.0.1:8080"
_FORMS = ("plain", "opaque", "uuid")


@dataclass(frozen=True)
class SeqNumber:
    """A number of a dense sequence: `number` as it is, `text` as the tag's
    template prints it (the number in decimal without one), and the
    `period` it belongs to ("2026-11-26") for a tag that restarts each
    period, else None."""

    number: int
    text: str
    period: object = None


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body) if self.body else {}


def _split_servers(servers):
    if servers is None:
        servers = os.environ.get("SNOWFLAKED_SERVERS") or DEFAULT_SERVER
    if isinstance(servers, str):
        servers = [s for s in (p.strip() for p in servers.split(",")) if s]
    if not servers:
        raise ValueError("no replica: give at least one URL")
    return list(servers)


class _Replica:
    """One replica: its keep-alive connections, each used by one request at
    a time (idle ones wait in a list)."""

    def __init__(self, url, tls_context):
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
            raise ValueError(f"replica {url!r}: http://HOST[:PORT] or https://HOST[:PORT]")
        self.url = url.rstrip("/")
        self.https = scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.tls_context = tls_context
        self.idle = []
        self.lock = threading.Lock()
        self.closed = False

    def _new_connection(self, timeout):
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self.tls_context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def send(self, method, target, deadline):
        """One exchange, done by `deadline` (time.monotonic()): each socket
        operation is given the time left, not the whole share again."""
        with self.lock:
            conn = self.idle.pop() if self.idle else None
        if conn is not None:
            try:
                return self._exchange(conn, method, target, deadline)
            except _NotSent:
                # The replica had closed this idle connection before the
                # request reached it (nothing of an answer came): the others
                # idle as long are as stale. Once more, on a new one.
                self.drop_idle()
        return self._exchange(self._new_connection(_left(deadline)), method, target, deadline)

    def _exchange(self, conn, method, target, deadline):
        answered = False
        try:
            if conn.sock is not None:
                conn.sock.settimeout(_left(deadline))
            else:
                conn.timeout = _left(deadline)
            conn.request(method, target, headers={"Accept": "application/json"})
            conn.sock.settimeout(_left(deadline))
            response = conn.getresponse()
            answered = True
            conn.sock.settimeout(_left(deadline))
            body = response.read()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
            conn.close()
            if not answered and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError)):
                raise _NotSent(e) from e
            raise
        except BaseException:
            conn.close()
            raise
        headers = {k.lower(): v for k, v in response.getheaders()}
        if response.will_close:
            conn.close()
        else:
            with self.lock:
                if self.closed:
                    conn.close()
                else:
                    self.idle.append(conn)
        return Reply(response.status, headers, body)

    def drop_idle(self):
        with self.lock:
            idle, self.idle = self.idle, []
        for conn in idle:
            conn.close()

    def close(self):
        with self.lock:
            self.closed = True
        self.drop_idle()


class _NotSent(ConnectionError):
    """A kept-alive connection failed before any of the answer came."""


def _left(deadline):
    return max(0.001, deadline - time.monotonic())


def _describe(error):
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS: the replica's certificate is not trusted: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or error}"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return str(error) or type(error).__name__


class Client:
    """A client of a snowflaked cluster. Thread-safe: one Client serves every
    thread of a process (its connections are kept alive and shared).

    servers: replica URLs (a list, or one string of them comma-separated);
      default $SNOWFLAKED_SERVERS, else http://127.0.0.1:8080.
    cacert: a PEM file of the CAs an https replica's certificate must chain
      to; default $SNOWFLAKED_CACERT, else the system's CAs.
    timeout: seconds a call may take, every replica and retry included.
    """

    def __init__(self, servers=None, *, cacert=None, timeout=5.0):
        if cacert is None:
            cacert = os.environ.get("SNOWFLAKED_CACERT") or None
        urls = _split_servers(servers)
        self._tls_context = ssl.create_default_context(cafile=cacert)
        self._replicas = [_Replica(u, self._tls_context) for u in urls]
        self._owners = {}  # strict tags' owners a refusal named, by URL
        self._lock = threading.Lock()
        forget_in_child(self)
        self.timeout = float(timeout)
        self._closed = False
        # Set by close(): a call waiting out a Retry-After ends at once.
        self._closing = threading.Event()

    @property
    def servers(self):
        return [r.url for r in self._replicas]

    def ids(self, tag, count=1, *, form=None):
        """`count` IDs of `tag`: ints (plain and opaque forms) or strs (UUIDs).
        `form` is "plain", "opaque" or "uuid"; None: the tag's own form."""
        if form is not None and form not in _FORMS:
            raise ValueError(f"form {form!r}: one of {', '.join(_FORMS)}")
        query = f"count={int(count)}" + (f"&form={form}" if form else "")
        body = self.request("GET", f"/id/{quote(tag, safe='')}?{query}").json()
        return [_id_value(v) for v in body["ids"]]

    def id(self, tag, *, form=None):
        """One ID of `tag` (see ids())."""
        return self.ids(tag, 1, form=form)[0]

    def seq(self, tag, count=1):
        """The next `count` numbers of the dense sequence `tag`, as SeqNumbers."""
        body = self.request("GET", f"/seq/{quote(tag, safe='')}?count={int(count)}").json()
        texts = body["ids"]
        numbers = body.get("numbers", texts)
        return [SeqNumber(int(n), t, body.get("period")) for t, n in zip(texts, numbers)]

    def next_seq(self, tag):
        """The next number of the sequence `tag` (see seq())."""
        return self.seq(tag, 1)[0]

    def request(self, method, target, *, timeout=None):
        """Sends `method target` to the replicas as `snowflaked get` does and
        returns the first 2xx as a Reply. A 4xx raises RequestError at once;
        UnavailableError when no replica answered 2xx in time: when none
        said 503 (all down or silent: nothing to wait for), or the shortest
        Retry-After would end past the time allowed."""
        if self._closed:
            raise ClosedError("the client is closed")
        allowed = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + allowed
        failures = {}
        while True:
            order = random.sample(self._replicas, len(self._replicas))
            retry_after = None
            for index, replica in enumerate(order):
                now = time.monotonic()
                if now >= deadline:
                    break
                # An even share of the time left for each replica not yet
                # asked, so one that hangs cannot use up the others' time.
                share_end = now + (deadline - now) / (len(order) - index)
                try:
                    reply = replica.send(method, target, share_end)
                    owner = _named_owner(reply, replica.url)
                    if owner is not None:
                        reply = self._ask_owner(owner, method, target, share_end, reply)
                except (OSError, http.client.HTTPException) as e:
                    failures[replica.url] = _describe(e)
                    continue
                if 200 <= reply.status < 300:
                    try:
                        reply.json()
                    except ValueError:
                        failures[replica.url] = "an answer that is not JSON"
                        continue
                    return reply
                code, message = _error_of(reply)
                if reply.status == 503:
                    failures[replica.url] = code
                    wait = _retry_after(reply)
                    retry_after = wait if retry_after is None else min(retry_after, wait)
                    continue
                if 400 <= reply.status < 500 and reply.status != 408:
                    raise RequestError(reply.status, code, message)
                failures[replica.url] = f"{reply.status} {code}"
            if retry_after is None or time.monotonic() + retry_after >= deadline:
                raise UnavailableError(
                    f"no replica answered within {allowed * 1000:.0f} ms", failures)
            if self._closing.wait(max(retry_after, 0.05)):
                raise ClosedError("the client was closed")

    def _ask_owner(self, owner, method, target, share_end, refusal):
        """A strict sequence's refusal named its owner: asked once, within
        the share of the replica that refused (as `snowflaked get` does)."""
        with self._lock:
            replica = self._owners.get(owner)
            if replica is None:
                replica = self._owners[owner] = _Replica(owner, self._tls_context)
        try:
            return replica.send(method, target, share_end)
        except (OSError, http.client.HTTPException, ValueError):
            return refusal

    def _forget(self):
        """In a forked child: the parent's sockets are the parent's (closing
        the child's copies sends nothing); new ones are made on demand."""
        for replica in self._replicas + list(self._owners.values()):
            replica.idle = []
            replica.lock = threading.Lock()
        self._lock = threading.Lock()

    def close(self):
        """Closes the kept-alive connections; the client takes no more calls."""
        self._closed = True
        self._closing.set()
        with self._lock:
            owners = list(self._owners.values())
        for replica in self._replicas + owners:
            replica.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _named_owner(reply, refused_by):
    """The URL of the owner a strict tag's 503 not_owner names, if any
    (without "owner_url", in the scheme of the replica that refused)."""
    if reply.status != 503:
        return None
    try:
        body = reply.json()
    except ValueError:
        return None
    if body.get("error") != "not_owner":
        return None
    if isinstance(body.get("owner_url"), str):
        return body["owner_url"]
    if isinstance(body.get("owner"), str) and body["owner"]:
        return refused_by.split("://", 1)[0] + "://" + body["owner"]
    return None


def _id_value(text):
    return int(text) if text.isdigit() else text


def _error_of(reply):
    try:
        body = reply.json()
        return body.get("error", str(reply.status)), body.get("message", "")
    except ValueError:
        return str(reply.status), reply.body.decode(errors="replace")[:200]


def _retry_after(reply):
    try:
        return max(0.0, float(reply.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0
