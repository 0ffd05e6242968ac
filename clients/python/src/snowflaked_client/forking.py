"""What a forked child must not inherit: a leased generator's worker ID and
stamps (parent and child would make the same IDs), a buffer's IDs (both
would hand them out), a client's kept-alive sockets (both would read one
answer). In the child each is made unusable (ClosedError), and nothing of
the parent's is given back from there."""

import os
import threading
import weakref

_live = weakref.WeakSet()
_lock = threading.Lock()


def forget_in_child(obj):
    """Registers obj: obj._forget() runs in a forked child."""
    with _lock:
        _live.add(obj)


def _after_fork_in_child():
    for obj in list(_live):
        obj._forget()  # pylint: disable=protected-access


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
