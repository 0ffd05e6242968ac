"""The errors of the client: the same names and meanings in the Java, Go
and Python clients (clients/README.md)."""


class SnowflakedError(Exception):
    """Base of every error this library raises."""


class RequestError(SnowflakedError):
    """A 4xx answer: the request is one every replica refuses the same way
    (a bad tag or count, an unknown sequence, one with no number left).
    Asking again does not help; nothing was issued."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message

    def __reduce__(self):  # pickled whole (multiprocessing, concurrent.futures)
        return (type(self), (self.status, self.code, self.message))


class UnavailableError(SnowflakedError):
    """No replica issued within the time allowed. `failures` maps each
    replica asked to its last error: a stable 503 code ("lease_expired",
    "sequence_unavailable", ...) or what went wrong with the connection.
    Nothing was issued that this client handed out; asking again later may
    succeed."""

    def __init__(self, message, failures):
        details = ", ".join(f"{url} ({why})" for url, why in failures.items())
        super().__init__(f"{message}: {details}" if details else message)
        self.reason = message
        self.failures = dict(failures)

    def __reduce__(self):
        return (type(self), (self.reason, self.failures))


class LeaseLostError(SnowflakedError):
    """The worker-ID lease is over (given back, or reclaimed after it ran
    out unrenewed) and no new one was taken yet: no ID is made with it."""


class LeaseExpiredError(SnowflakedError):
    """The leased generator makes no ID now: its lease's deadline passed
    unrenewed, the wall clock is past the grant's time fence, before its
    first timestamp, or it stepped back further than the generator waits."""


class ClosedError(SnowflakedError):
    """The object was closed."""
