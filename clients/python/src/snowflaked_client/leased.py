"""A snowflake generator in this process over a worker ID leased from the
service (POST /v1/leases), keeping every point of the holder's contract
(docs/api.md#worker-id-leases-for-your-own-generators):

1. its deadline is counted on CLOCK_BOOTTIME (a suspended host's sleep
   counts) from a reading taken before the take or renewal was sent; from
   the deadline on it makes no ID, renewed or not (a renewal answered after
   it revives nothing);
2. it renews after renew_after_ms on a background thread, through any
   replica, a failed renewal leaving the deadline where it was; a lost lease
   (410) or one past its deadline is replaced by a new one (a new worker
   ID), the expired one given back with its last stamp;
3. it stamps within the grant: from first_timestamp_ms up to the time fence
   max_timestamp_ms, never below its own last stamp (a clock stepped back is
   waited out, up to max_backward_wait);
4. close() stops it, then gives the lease back with the last stamp used
   (0 when it made none: the next holder starts where this one could have);
5. the token stays in this object and dies with it: a forked child gets an
   unusable generator (ClosedError) and gives nothing back.
"""

import logging
import threading
import time
from urllib.parse import quote

from .errors import (ClosedError, LeaseExpiredError, LeaseLostError, RequestError,
                     SnowflakedError)
from .forking import forget_in_child
from .layout import Layout

log = logging.getLogger("snowflaked_client")

# How soon a failed renewal is tried again (a tenth of what is left of the
# lease, within these bounds), and a take in place of a lost lease.
_MIN_RETRY_S = 0.05
_MAX_RETRY_S = 1.0
_REPLACE_RETRY_S = 0.5


def _boot_now():
    """Seconds on the clock that counts a suspend (CLOCK_BOOTTIME)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _wall_ms():
    return time.time_ns() // 1_000_000


class _Grant:
    """One lease as the holder keeps it."""

    def __init__(self, answer, sent_at, layout):
        self.worker_id = answer["worker_id"]
        self.datacenter_id = answer.get("datacenter_id", 0)
        if self.worker_id >> layout.worker_bits or self.datacenter_id >> layout.datacenter_bits:
            raise ValueError(f"worker ID {self.worker_id} or datacenter ID {self.datacenter_id} "
                             "does not fit the layout")
        self.token = answer["token"]
        self.deadline = sent_at + answer["lease_ms"] / 1000
        self.renew_at = sent_at + answer["renew_after_ms"] / 1000
        self.fence_ms = answer["max_timestamp_ms"]
        # The first unit whose start is at or after first_timestamp_ms.
        self.first_unit = -(-(answer["first_timestamp_ms"] - layout.epoch_ms) // layout.time_unit_ms)
        self.lost = False


class LeasedGenerator:
    """IDs made in this process, `next_id()`, thread-safe, over a worker ID
    leased by the cluster `client` talks to.

    holder: a name for the lease (who holds it: `snowflaked lease list`).
    pool: a named pool; then `layout` is required (its worker_bits the
      pool's). Without a pool the cluster's own pool and layout: the IDs
      share one space with the daemons'.
    duration_ms: the lease asked for (the cluster grants within its limits).
    max_backward_wait: seconds a clock stepped back is waited out.
    """

    def __init__(self, client, holder, *, pool=None, layout=None, duration_ms=None,
                 max_backward_wait=1.0):
        if (pool is None) != (layout is None):
            raise ValueError("a named pool's generator needs its layout, and only it takes one")
        self._client = client
        self.holder = holder
        self.pool = pool
        self._layout = layout
        self._duration_ms = duration_ms
        self.max_backward_wait = float(max_backward_wait)
        self._lock = threading.Condition(threading.Lock())
        self._closed = False
        self._forked = False
        self._last_unit = -1
        self._sequence = 0
        self._grant, self._layout = self._take()
        self._shifts = self._layout.shifts()
        self._max_sequence = (1 << self._layout.sequence_bits) - 1
        self._thread = threading.Thread(target=self._keep, name=f"snowflaked-lease-{holder}",
                                        daemon=True)
        self._thread.start()
        forget_in_child(self)

    @property
    def layout(self):
        return self._layout

    @property
    def worker_id(self):
        with self._lock:
            return self._grant.worker_id

    def _pool_query(self):
        return f"&pool={quote(self.pool, safe='')}" if self.pool else ""

    def _take(self):
        """A new lease: (its grant, the layout). self._layout is only read:
        a replacement's take runs beside next_id."""
        query = f"holder={quote(self.holder, safe='')}" + self._pool_query()
        if self.pool:
            query += f"&worker_bits={self._layout.worker_bits}"
        if self._duration_ms is not None:
            query += f"&duration_ms={int(self._duration_ms)}"
        sent_at = _boot_now()
        answer = self._client.request("POST", f"/v1/leases?{query}").json()
        try:
            if self.pool:
                layout = self._layout
                if answer["worker_bits"] != layout.worker_bits:
                    raise ValueError(f"pool {self.pool} has {answer['worker_bits']} worker "
                                     f"bits, the layout {layout.worker_bits}")
            else:
                layout = Layout.from_lease(answer["layout"])
                if self._layout is not None and layout != self._layout:
                    raise ValueError("the cluster's layout changed under the generator")
            return _Grant(answer, sent_at, layout), layout
        except (KeyError, TypeError, ValueError):
            # Not ours to keep: given back at once (its token is known).
            self._give_back_quietly(answer.get("worker_id"), answer.get("token"), 0)
            raise

    def next_id(self):
        """The next ID. Raises LeaseExpiredError or LeaseLostError when no ID
        may be made now (the lease over and no new one yet, the clock past
        the fence or stepped back too far), ClosedError once closed."""
        layout = self._layout
        with self._lock:
            while True:
                if self._closed:
                    raise ClosedError("the generator is closed" +
                                      (" (in a forked child)" if self._forked else ""))
                grant = self._grant
                if grant.lost:
                    raise LeaseLostError(f"the lease of worker ID {grant.worker_id} is lost; "
                                         "a new one is being taken")
                # The wall clock first, then the deadline: a pause between
                # the two then errs on the side of no ID.
                now_ms = _wall_ms()
                if _boot_now() >= grant.deadline:
                    raise LeaseExpiredError(f"the lease of worker ID {grant.worker_id} ran "
                                            "out unrenewed; a new one is being taken")
                unit = layout.unit_of(now_ms)
                if unit < 0:
                    raise LeaseExpiredError("the clock reads earlier than the layout's epoch")
                floor = max(self._last_unit, grant.first_unit)
                if unit < floor:
                    wait_s = (layout.unit_start(floor) - now_ms) / 1000
                    if wait_s > self.max_backward_wait:
                        what = ("its first timestamp (past what its previous holder could "
                                "have used)" if floor == grant.first_unit else "its last stamp")
                        raise LeaseExpiredError(f"the clock is {wait_s * 1000:.0f} ms behind "
                                                f"{what} on worker ID {grant.worker_id}")
                    self._lock.wait(wait_s)
                    continue
                if layout.unit_start(unit) > grant.fence_ms:
                    raise LeaseExpiredError("the clock is past the lease's time fence")
                if unit >= 1 << layout.time_bits:
                    raise LeaseExpiredError("the layout's time bits have run out")
                if unit == self._last_unit:
                    if self._sequence == self._max_sequence:
                        # This unit is used up: the next one.
                        self._lock.wait(max(0.0, (layout.unit_start(unit + 1) - now_ms) / 1000))
                        continue
                    self._sequence += 1
                else:
                    self._last_unit = unit
                    self._sequence = 0
                s = self._shifts
                return ((unit << s["time"]) | (grant.datacenter_id << s["datacenter"]) |
                        (grant.worker_id << s["worker"]) | (self._sequence << s["sequence"]))

    def __iter__(self):
        return self

    def __next__(self):
        return self.next_id()

    def _last_timestamp_ms(self):
        """The last instant of the last unit stamped (0: none yet)."""
        if self._last_unit < 0:
            return 0
        return self._layout.unit_start(self._last_unit + 1) - 1

    def _lease_target(self, worker_id, token, last_ms):
        target = f"/v1/leases/{worker_id}?token={token}" + self._pool_query()
        return target + (f"&last_timestamp_ms={last_ms}" if last_ms is not None else "")

    def _keep(self):
        """The renewal thread: renews on time; replaces a lost or expired lease."""
        while True:
            try:
                if not self._keep_once():
                    return
            except Exception:  # noqa: BLE001 - the thread must not die: said, then on
                log.exception("snowflaked_client: renewing the lease failed")
                with self._lock:
                    self._lock.wait(_MAX_RETRY_S)

    def _keep_once(self):
        """One renewal or replacement; False once closed."""
        with self._lock:
            grant = self._grant
            if not grant.lost:
                self._lock.wait(max(0.0, grant.renew_at - _boot_now()))
            if self._closed:
                return False
            grant = self._grant
            over = grant.lost or _boot_now() >= grant.deadline
            # An expired lease is given back with its last stamp; a lost one is gone.
            old_last_ms = None if grant.lost else self._last_timestamp_ms()
            target = self._lease_target(grant.worker_id, grant.token, self._last_timestamp_ms())
        if over:
            self._replace(grant, old_last_ms)
            return True
        sent_at = _boot_now()
        try:
            # Within the client's timeout too: close() waits for this.
            answer = self._client.request(
                "PUT", target,
                timeout=max(0.01, min(self._client.timeout, grant.deadline - sent_at))).json()
        except RequestError as e:
            with self._lock:
                if e.code == "lease_lost":
                    grant.lost = True
                    log.warning("snowflaked_client: lease of worker ID %d lost", grant.worker_id)
                else:  # a proxy's 404, a bad_timestamp: later, not in a loop
                    grant.renew_at = _boot_now() + _retry_s(grant)
            return True
        except SnowflakedError:
            # The deadline stays where it was; sooner than planned, again.
            with self._lock:
                grant.renew_at = _boot_now() + _retry_s(grant)
            return True
        with self._lock:
            if _boot_now() < grant.deadline:  # a late answer revives nothing
                grant.deadline = sent_at + answer["lease_ms"] / 1000
                grant.renew_at = sent_at + answer["renew_after_ms"] / 1000
                grant.fence_ms = max(grant.fence_ms, answer["max_timestamp_ms"])
        return True

    def _replace(self, old, old_last_ms):
        """A new lease in place of a lost or expired one: a new worker ID.
        An expired one is given back with its last stamp (its worker ID
        comes back before the reaper would bring it)."""
        if old_last_ms is not None:
            self._give_back_quietly(old.worker_id, old.token, old_last_ms)
            with self._lock:
                old.lost = True  # nothing more is made or given back on it
        try:
            grant, _ = self._take()
        except ClosedError:  # the client was closed: nothing more to take
            with self._lock:
                while not self._closed:
                    self._lock.wait()
            return
        except SnowflakedError as e:
            log.warning("snowflaked_client: no new lease yet: %s", e)
            with self._lock:
                self._lock.wait(_REPLACE_RETRY_S)
            return
        with self._lock:
            if not self._closed:
                self._grant = grant
                self._last_unit = -1
                self._sequence = 0
                return
        self._give_back_quietly(grant.worker_id, grant.token, 0)

    def _give_back(self, worker_id, token, last_ms):
        try:
            self._client.request("DELETE", self._lease_target(worker_id, token, last_ms))
        except RequestError as e:
            if e.code != "lease_lost":  # lost: nothing to give back
                raise

    def _give_back_quietly(self, worker_id, token, last_ms):
        if worker_id is None or token is None:
            return
        try:
            self._give_back(worker_id, token, last_ms)
        except SnowflakedError as e:  # not given back: it runs out by itself
            log.warning("snowflaked_client: worker ID %s not given back: %s", worker_id, e)

    def _forget(self):
        """In a forked child: the parent's lease stays the parent's."""
        self._forked = True
        self._closed = True

    def close(self):
        """Stops making IDs, then gives the lease back with the last stamp
        used (the next holder starts above it). Raises the give-back's
        error if no replica took it: the lease then runs out by itself."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._lock.notify_all()
        self._thread.join()
        with self._lock:
            grant, last_ms = self._grant, self._last_timestamp_ms()
        if not grant.lost:
            self._give_back(grant.worker_id, grant.token, last_ms)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
            return
        try:  # the body's exception is the one to see
            self.close()
        except SnowflakedError as e:
            log.warning("snowflaked_client: closing after an error: %s", e)


def _retry_s(grant):
    return min(_MAX_RETRY_S, max(_MIN_RETRY_S, (grant.deadline - _boot_now()) / 10))
