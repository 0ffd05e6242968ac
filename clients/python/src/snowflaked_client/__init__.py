"""A client of snowflaked: IDs and sequence numbers from the service, a
local buffer of them, and a generator in this process over a worker ID
leased from the service. Standard library only."""

from .buffer import IdBuffer, NotBufferableError, SeqBuffer
from .client import Client, SeqNumber
from .errors import (ClosedError, LeaseExpiredError, LeaseLostError, RequestError,
                     SnowflakedError, UnavailableError)
from .layout import Layout
from .leased import LeasedGenerator

__version__ = "0.5.0"  # the server's version (CMakeLists.txt): tests check they agree
__all__ = ["Client", "SeqNumber", "IdBuffer", "SeqBuffer", "NotBufferableError",
           "LeasedGenerator", "Layout",
           "SnowflakedError", "RequestError", "UnavailableError", "LeaseLostError",
           "LeaseExpiredError", "ClosedError", "__version__"]
