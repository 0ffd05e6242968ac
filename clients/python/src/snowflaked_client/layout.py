"""An ID's layout: how a leased generator composes an ID, as the daemons
compose theirs (docs/api.md, "Worker-ID leases for your own generators")."""

from dataclasses import dataclass

_FIELDS = ("time", "datacenter", "worker", "sequence")


@dataclass(frozen=True)
class Layout:
    """Bit widths, the order of the fields from the most significant bit
    down, the time unit and the epoch. `from_lease` reads the one a lease of
    the cluster's pool carries; a named pool's holder gives its own (its
    worker_bits must be the pool's)."""

    time_bits: int = 41
    datacenter_bits: int = 0
    worker_bits: int = 10
    sequence_bits: int = 12
    order: str = "time,datacenter,worker,sequence"
    time_unit_ms: int = 1
    epoch_ms: int = 1735689600000

    @staticmethod
    def from_lease(layout):
        return Layout(time_bits=layout["time_bits"], datacenter_bits=layout["datacenter_bits"],
                      worker_bits=layout["worker_bits"], sequence_bits=layout["sequence_bits"],
                      order=layout["order"], time_unit_ms=layout["time_unit_ms"],
                      epoch_ms=layout["epoch_ms"])

    def __post_init__(self):
        fields = self.order.split(",")
        if "datacenter" not in fields and self.datacenter_bits == 0:
            fields.append("datacenter")  # a layout without one (sonyflake's) may leave it out
        if sorted(fields) != sorted(_FIELDS):
            raise ValueError(f"layout order {self.order!r}: each of {', '.join(_FIELDS)} once "
                             "(datacenter may be left out when it has no bits)")
        total = self.time_bits + self.datacenter_bits + self.worker_bits + self.sequence_bits
        if total > 63 or self.time_bits < 1 or self.sequence_bits < 0 or self.time_unit_ms < 1:
            raise ValueError(f"layout {self}: at most 63 bits, a time field and a unit of 1 ms or more")

    def shifts(self):
        """Each field's shift, from its place in `order`."""
        widths = {"time": self.time_bits, "datacenter": self.datacenter_bits,
                  "worker": self.worker_bits, "sequence": self.sequence_bits}
        shifts, below = {"datacenter": 0}, 0
        for field in reversed(self.order.split(",")):
            shifts[field] = below
            below += widths[field]
        return shifts

    def unit_of(self, ms):
        """The time unit an instant (ms since 1970) falls in."""
        return (ms - self.epoch_ms) // self.time_unit_ms

    def unit_start(self, unit):
        return self.epoch_ms + unit * self.time_unit_ms
