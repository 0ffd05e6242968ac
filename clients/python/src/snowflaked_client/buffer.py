"""A local buffer: IDs (or a per-daemon sequence's numbers) fetched ahead in
batches by a background thread, refilled at a low-water mark and handed out
without a network call. An entry older than `max_age` seconds (counted from
when its batch was asked for) is dropped, never handed out, so buffered IDs
stay roughly time-ordered with the rest of the cluster's. A buffer nobody
takes from fetches nothing: a refill follows takes, not the clock."""

import copy
import threading
import time

from .errors import ClosedError, RequestError, SnowflakedError, UnavailableError
from .forking import forget_in_child

# After a failed fetch the thread waits this long, doubled up to the
# second, before the next: a cluster that refuses is not hammered.
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 1.0


class _Buffer:
    def __init__(self, client, fetch, *, batch, low_water, max_age, name):
        if batch < 1:
            raise ValueError("batch: 1 or more")
        self._client = client
        self._fetch = fetch
        self.batch = int(batch)
        self.low_water = int(batch // 4 if low_water is None else low_water)
        self.max_age = float(max_age)
        if self.low_water < 0 or self.max_age <= 0:
            raise ValueError("low_water: 0 or more; max_age: more than 0")
        self._entries = []  # (asked_at, values), oldest first
        self._next = 0      # index into the first entry's values
        self._count = 0
        self._wanted = True  # a take since the last fetch (or none yet): refill
        lock = threading.Lock()
        self._lock = threading.Condition(lock)     # the takers wait on it: a batch came
        self._wanted_cv = threading.Condition(lock)  # the refill thread waits on it: a take
        self._closed = False
        self._error = None
        self._thread = threading.Thread(target=self._refill, name=name, daemon=True)
        self._thread.start()
        forget_in_child(self)

    def __len__(self):
        with self._lock:
            self._drop_stale(time.monotonic())
            return self._count

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self, timeout=None):
        """The next buffered value; waits for a batch if none is left (up to
        `timeout` seconds, default the client's), then raises the last
        fetch's error (UnavailableError; a RequestError at once)."""
        deadline = time.monotonic() + (self._client.timeout if timeout is None else timeout)
        with self._lock:
            while True:
                if self._closed:
                    raise ClosedError("the buffer is closed")
                now = time.monotonic()
                self._drop_stale(now)
                self._wanted = True
                if self._count:
                    values = self._entries[0][1]
                    value = values[self._next]
                    self._next += 1
                    self._count -= 1
                    if self._next == len(values):
                        self._entries.pop(0)
                        self._next = 0
                    if self._count <= self.low_water:
                        self._wanted_cv.notify()
                    return value
                self._wanted_cv.notify()  # the refill thread, if it waits
                if isinstance(self._error, (RequestError, ClosedError)):
                    raise copy.copy(self._error)  # waiting would not help
                if now >= deadline:
                    if isinstance(self._error, SnowflakedError):
                        raise copy.copy(self._error)  # a fresh one: no traceback piling up
                    raise UnavailableError("no batch came in time", {})
                self._lock.wait(deadline - now)

    def _drop_stale(self, now):
        while self._entries and now - self._entries[0][0] > self.max_age:
            _, values = self._entries.pop(0)
            self._count -= len(values) - self._next
            self._next = 0

    def _refill(self):
        backoff = _FIRST_BACKOFF_S
        while True:
            with self._lock:
                while not self._closed and (self._count > self.low_water or not self._wanted):
                    # Wakes for a take, and when the oldest batch goes stale.
                    oldest = self._entries[0][0] if self._entries else None
                    wait = None if oldest is None else max(0.01, oldest + self.max_age - time.monotonic())
                    self._wanted_cv.wait(wait)
                    self._drop_stale(time.monotonic())
                if self._closed:
                    return
                self._wanted = False
            asked_at = time.monotonic()
            try:
                values = self._fetch(self.batch)
            except SnowflakedError as e:
                with self._lock:
                    self._error = e
                    # A waiting taker asks again (_wanted): an idle buffer does not.
                    self._lock.notify_all()
                    if isinstance(e, ClosedError):  # the client was closed: nothing more to fetch
                        return
                    self._backoff(backoff)
                backoff = min(_MAX_BACKOFF_S, backoff * 2)
                continue
            except Exception as e:  # noqa: BLE001 - the thread must not die
                with self._lock:
                    self._error = UnavailableError(f"a fetch failed: {e!r}", {})
                    self._lock.notify_all()
                    self._backoff(_MAX_BACKOFF_S)
                continue
            backoff = _FIRST_BACKOFF_S
            with self._lock:
                self._error = None
                if values:
                    self._entries.append((asked_at, values))
                    self._count += len(values)
                self._lock.notify_all()

    def _backoff(self, seconds):
        """After a failed fetch: the whole pause, whatever takers ask meanwhile
        (a refusing cluster is not hammered); close() ends it. Lock held."""
        end = time.monotonic() + seconds
        while not self._closed and time.monotonic() < end:
            self._wanted_cv.wait(end - time.monotonic())

    def _forget(self):
        """In a forked child: what the parent fetched is the parent's."""
        self._closed = True
        self._entries, self._count = [], 0

    def close(self):
        """Stops the refill thread; what is buffered is dropped (unused IDs
        or numbers leave no duplicate, a gap at most)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            self._wanted_cv.notify()
        self._thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class IdBuffer(_Buffer):
    """IDs of `tag` fetched ahead, `batch` a request (at most the daemons'
    `http.max_batch`), refilled once `low_water` or fewer are left (default a
    quarter of a batch), none handed out older than `max_age` seconds.
    Thread-safe; close() stops it; not carried into a forked child."""

    def __init__(self, client, tag, *, batch=1000, low_water=None, max_age=1.0, form=None):
        super().__init__(client, lambda n: client.ids(tag, n, form=form), batch=batch,
                         low_water=low_water, max_age=max_age, name=f"snowflaked-ids-{tag}")


class SeqBuffer(_Buffer):
    """Numbers of a per-daemon sequence fetched ahead (SeqNumbers), as
    IdBuffer does. Refused (ValueError), at the start and before each
    batch: a strict tag (its numbers keep their real-time order only one
    request at a time), a tag that restarts each period (a buffer would
    hand out the last period's numbers after the turn), and a tag the
    cluster does not list."""

    def __init__(self, client, tag, *, batch=100, low_water=None, max_age=60.0):
        _check_bufferable(client, tag)
        first = [True]

        def fetch(n):
            _check_bufferable(client, tag)
            # A daemon lists a tag as periodic only once it has read its
            # node: the first batch is of one number, and a number that
            # carries a period is dropped (a gap of one) and refused.
            numbers = client.seq(tag, 1 if first[0] else n)
            if any(number.period is not None for number in numbers):
                raise NotBufferableError(409, "periodic_sequence",
                                         f"sequence {tag!r} restarts each period: ask Client.next_seq()")
            first[0] = False
            return numbers
        super().__init__(client, fetch, batch=batch, low_water=low_water, max_age=max_age,
                         name=f"snowflaked-seq-{tag}")


class NotBufferableError(RequestError):
    """A sequence a SeqBuffer may not hold (strict, periodic, or unknown)."""

    def __init__(self, status, code, message):
        super().__init__(status, code, message)


def _check_bufferable(client, tag):
    """The cluster's /ready?for=seq lists each sequence: a strict one with
    "order": "strict", a periodic one with "reset". A cluster that cannot
    say raises its UnavailableError."""
    body = client.request("GET", "/ready?for=seq").json()
    entry = (body.get("sequences") or {}).get(tag)
    if entry is None:
        raise NotBufferableError(404, "unknown_sequence",
                                 f"sequence {tag!r} is not listed by the cluster (yet)")
    if entry.get("order") == "strict":
        raise NotBufferableError(409, "strict_sequence",
                                 f"sequence {tag!r} is strict: ask Client.next_seq() for each number")
    if "reset" in entry:
        raise NotBufferableError(409, "periodic_sequence",
                                 f"sequence {tag!r} restarts each period: ask Client.next_seq()")
