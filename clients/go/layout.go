package snowflaked

import (
	"fmt"
	"sort"
	"strings"
)

// Layout is how a leased generator composes an ID, as the daemons compose
// theirs: bit widths, the order of the fields from the most significant
// bit down, the time unit and the epoch. A lease of the cluster's pool
// carries the cluster's; a named pool's holder gives its own (its
// WorkerBits the pool's).
type Layout struct {
	TimeBits       int    `json:"time_bits"`
	DatacenterBits int    `json:"datacenter_bits"`
	WorkerBits     int    `json:"worker_bits"`
	SequenceBits   int    `json:"sequence_bits"`
	Order          string `json:"order"`
	TimeUnitMs     int64  `json:"time_unit_ms"`
	EpochMs        int64  `json:"epoch_ms"`
}

// DefaultLayout is the daemons' default: 41 bits of milliseconds since
// 2025-01-01, 10 of worker ID, 12 of sequence.
var DefaultLayout = Layout{TimeBits: 41, WorkerBits: 10, SequenceBits: 12,
	Order: "time,datacenter,worker,sequence", TimeUnitMs: 1, EpochMs: 1735689600000}

type shifts struct{ time, datacenter, worker, sequence uint }

// check validates the layout and returns each field's shift.
func (l Layout) check() (shifts, error) {
	fields := strings.Split(l.Order, ",")
	has := map[string]bool{}
	for _, f := range fields {
		has[f] = true
	}
	if !has["datacenter"] && l.DatacenterBits == 0 {
		fields = append(fields, "datacenter") // a layout without one (sonyflake's) may leave it out
	}
	sorted := append([]string(nil), fields...)
	sort.Strings(sorted)
	if strings.Join(sorted, ",") != "datacenter,sequence,time,worker" {
		return shifts{}, fmt.Errorf("layout order %q: each of time, datacenter, worker, sequence once", l.Order)
	}
	total := l.TimeBits + l.DatacenterBits + l.WorkerBits + l.SequenceBits
	if total > 63 || l.TimeBits < 1 || l.SequenceBits < 0 || l.WorkerBits < 0 || l.DatacenterBits < 0 || l.TimeUnitMs < 1 {
		return shifts{}, fmt.Errorf("layout %+v: at most 63 bits, a time field and a unit of 1 ms or more", l)
	}
	widths := map[string]int{"time": l.TimeBits, "datacenter": l.DatacenterBits, "worker": l.WorkerBits, "sequence": l.SequenceBits}
	at := map[string]uint{}
	below := 0
	for i := len(fields) - 1; i >= 0; i-- {
		at[fields[i]] = uint(below)
		below += widths[fields[i]]
	}
	return shifts{at["time"], at["datacenter"], at["worker"], at["sequence"]}, nil
}

// UnitOf is the time unit an instant (ms since 1970) falls in.
func (l Layout) UnitOf(ms int64) int64 { return floorDiv(ms-l.EpochMs, l.TimeUnitMs) }

// UnitStart is the first millisecond of a unit.
func (l Layout) UnitStart(unit int64) int64 { return l.EpochMs + unit*l.TimeUnitMs }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
