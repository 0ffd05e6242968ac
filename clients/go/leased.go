package snowflaked

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// LeaseConfig says which worker ID a LeasedGenerator leases and how.
type LeaseConfig struct {
	// Pool is a named pool; then Layout is required (its WorkerBits the
	// pool's). Empty: the cluster's own pool and layout, so that the IDs
	// share one space with the daemons'.
	Pool   string
	Layout *Layout
	// Duration is the lease asked for (the cluster grants within its
	// limits); 0: the longest it grants.
	Duration time.Duration
	// MaxBackwardWait is how far back a stepped clock is waited out
	// (default 1 s); further back, ErrLeaseExpired until it is past the last
	// stamp again.
	MaxBackwardWait time.Duration
	// Now is the wall clock IDs are stamped by (default time.Now): a test's
	// clock, or one shifted as a test cluster's is.
	Now func() time.Time
}

// grant is one lease as the holder keeps it.
type grant struct {
	workerID, datacenterID uint64
	token                  string
	deadline, renewAt      time.Duration // on bootNow()
	fenceMs                int64         // max_timestamp_ms: no unit starting after it
	firstUnit              int64         // the first unit whose start is at or after first_timestamp_ms
	lost                   bool
}

type leaseAnswer struct {
	WorkerID         uint64  `json:"worker_id"`
	DatacenterID     uint64  `json:"datacenter_id"`
	WorkerBits       int     `json:"worker_bits"`
	Token            string  `json:"token"`
	LeaseMs          int64   `json:"lease_ms"`
	RenewAfterMs     int64   `json:"renew_after_ms"`
	FirstTimestampMs int64   `json:"first_timestamp_ms"`
	MaxTimestampMs   int64   `json:"max_timestamp_ms"`
	Layout           *Layout `json:"layout"`
}

// LeasedGenerator makes IDs in this process, at the layout's limit, over a
// worker ID leased from the cluster, keeping the holder's contract of
// docs/api.md#worker-id-leases-for-your-own-generators: its deadline
// counted on CLOCK_BOOTTIME from before each take or renewal was sent;
// renewals in the background through any replica (a failed one leaves the
// deadline where it was); a lost or expired lease replaced by a new one (a
// new worker ID); stamps within the grant, from its first timestamp up to
// its time fence, never below its own last stamp; Close gives the lease
// back with the last stamp used. Safe for concurrent use.
type LeasedGenerator struct {
	client *Client
	holder string
	cfg    LeaseConfig
	layout Layout
	shifts shifts
	maxSeq int64

	mu       sync.Mutex
	grant    *grant
	lastUnit int64
	seq      int64
	closed   bool

	wake     chan struct{} // closed by Close: wakes the renewal goroutine
	stop     context.CancelFunc
	stopped  context.Context // ends a renewal or take in flight at Close
	finished chan struct{}
}

// NewLeasedGenerator takes a lease for holder (a name `snowflaked lease
// list` shows) and starts renewing it.
func NewLeasedGenerator(ctx context.Context, c *Client, holder string, cfg LeaseConfig) (*LeasedGenerator, error) {
	if cfg.Pool != "" && cfg.Layout == nil {
		return nil, errors.New("snowflaked: a named pool's generator needs its layout")
	}
	if cfg.MaxBackwardWait <= 0 {
		cfg.MaxBackwardWait = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &LeasedGenerator{client: c, holder: holder, cfg: cfg, lastUnit: -1,
		wake: make(chan struct{}), finished: make(chan struct{})}
	g.stopped, g.stop = context.WithCancel(context.Background())
	if cfg.Layout != nil {
		g.layout = *cfg.Layout
	}
	first, layout, err := g.take(ctx)
	if err != nil {
		return nil, err
	}
	g.layout = layout
	if g.shifts, err = g.layout.check(); err != nil {
		_ = g.giveBack(context.Background(), first, 0)
		return nil, err
	}
	g.maxSeq = int64(1)<<g.layout.SequenceBits - 1
	g.grant = first
	go g.keep()
	return g, nil
}

// Layout is the layout the IDs are composed in.
func (g *LeasedGenerator) Layout() Layout { return g.layout }

// WorkerID is the worker ID leased now.
func (g *LeasedGenerator) WorkerID() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.grant.workerID
}

func (g *LeasedGenerator) poolQuery() string {
	if g.cfg.Pool == "" {
		return ""
	}
	return "&pool=" + url.QueryEscape(g.cfg.Pool)
}

// take leases a worker ID; the layout is the cluster's (a named pool's:
// the config's). g.layout is not written here: a replacement's take runs
// beside NextID.
func (g *LeasedGenerator) take(ctx context.Context) (*grant, Layout, error) {
	layout := g.layout
	query := "holder=" + url.QueryEscape(g.holder) + g.poolQuery()
	if g.cfg.Pool != "" {
		query += fmt.Sprintf("&worker_bits=%d", g.layout.WorkerBits)
	}
	if g.cfg.Duration > 0 {
		query += fmt.Sprintf("&duration_ms=%d", g.cfg.Duration.Milliseconds())
	}
	sentAt := bootNow()
	body, err := g.client.Request(ctx, http.MethodPost, "/v1/leases?"+query)
	if err != nil {
		return nil, layout, err
	}
	var a leaseAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Token == "" || a.LeaseMs <= 0 || a.FirstTimestampMs <= 0 || a.MaxTimestampMs <= 0 {
		return nil, layout, fmt.Errorf("snowflaked: a lease answer without its terms: %s", body)
	}
	if g.cfg.Pool != "" {
		if a.WorkerBits != layout.WorkerBits {
			_ = g.giveBack(ctx, &grant{workerID: a.WorkerID, token: a.Token}, 0)
			return nil, layout, fmt.Errorf("snowflaked: pool %s has %d worker bits, the layout %d", g.cfg.Pool, a.WorkerBits, layout.WorkerBits)
		}
	} else if a.Layout != nil {
		layout = *a.Layout
	}
	if a.WorkerID>>layout.WorkerBits != 0 || a.DatacenterID>>layout.DatacenterBits != 0 {
		_ = g.giveBack(ctx, &grant{workerID: a.WorkerID, token: a.Token}, 0)
		return nil, layout, fmt.Errorf("snowflaked: worker ID %d or datacenter ID %d does not fit the layout", a.WorkerID, a.DatacenterID)
	}
	unit := layout.TimeUnitMs
	return &grant{workerID: a.WorkerID, datacenterID: a.DatacenterID, token: a.Token,
		deadline: sentAt + time.Duration(a.LeaseMs)*time.Millisecond,
		renewAt:  sentAt + time.Duration(a.RenewAfterMs)*time.Millisecond,
		fenceMs:  a.MaxTimestampMs,
		// ceil((first - epoch) / unit)
		firstUnit: -floorDiv(-(a.FirstTimestampMs - layout.EpochMs), unit)}, layout, nil
}

// NextID makes the next ID. It is ErrLeaseExpired or ErrLeaseLost (wrapped)
// when no ID may be made now (a new lease is being taken), ErrClosed once
// closed.
func (g *LeasedGenerator) NextID() (uint64, error) {
	g.mu.Lock()
	for {
		if g.closed {
			g.mu.Unlock()
			return 0, ErrClosed
		}
		gr := g.grant
		if gr.lost {
			g.mu.Unlock()
			return 0, fmt.Errorf("%w (worker ID %d)", ErrLeaseLost, gr.workerID)
		}
		now := g.cfg.Now()
		nowMs := now.UnixMilli()
		unit := g.layout.UnitOf(nowMs)
		if unit < 0 {
			g.mu.Unlock()
			return 0, fmt.Errorf("%w: the clock reads earlier than the layout's epoch", ErrLeaseExpired)
		}
		if unit != g.lastUnit && bootNow() >= gr.deadline {
			// Checked as each unit is first stamped: a unit stamped before the
			// deadline is within the fence, which the next holder starts past.
			g.mu.Unlock()
			return 0, fmt.Errorf("%w: the lease of worker ID %d ran out unrenewed", ErrLeaseExpired, gr.workerID)
		}
		floor := g.lastUnit
		if gr.firstUnit > floor {
			floor = gr.firstUnit
		}
		if unit < floor {
			wait := time.UnixMilli(g.layout.UnitStart(floor)).Sub(now)
			if wait > g.cfg.MaxBackwardWait {
				g.mu.Unlock()
				return 0, fmt.Errorf("%w: the clock is %v behind the last or first timestamp this worker ID may use", ErrLeaseExpired, wait)
			}
			g.mu.Unlock()
			pause(wait)
			g.mu.Lock()
			continue
		}
		if g.layout.UnitStart(unit) > gr.fenceMs {
			g.mu.Unlock()
			return 0, fmt.Errorf("%w: the clock is past the lease's time fence", ErrLeaseExpired)
		}
		if unit >= int64(1)<<g.layout.TimeBits {
			g.mu.Unlock()
			return 0, fmt.Errorf("%w: the layout's time bits have run out", ErrLeaseExpired)
		}
		if unit == g.lastUnit {
			if g.seq == g.maxSeq { // this unit is used up: the next one
				g.mu.Unlock()
				pause(time.UnixMilli(g.layout.UnitStart(unit + 1)).Sub(now))
				g.mu.Lock()
				continue
			}
			g.seq++
		} else {
			g.lastUnit, g.seq = unit, 0
		}
		s := g.shifts
		id := uint64(unit)<<s.time | gr.datacenterID<<s.datacenter | gr.workerID<<s.worker | uint64(g.seq)<<s.sequence
		g.mu.Unlock()
		return id, nil
	}
}

// pause waits d: the rest of a time unit, or a clock stepped back. A timer
// oversleeps by up to a millisecond (a quarter of the layout's limit lost
// at each unit's end), so the last 1.5 ms are spent spinning on the clock.
// Not a loop of runtime.Gosched: a goroutine yielding in a tight loop
// delayed the renewal goroutine's timer by a second at a time (seen in
// TestRenewedThroughAKilledDaemon), past the lease.
func pause(d time.Duration) {
	const spin = 1500 * time.Microsecond
	end := time.Now().Add(d)
	if d > spin {
		time.Sleep(d - spin)
	}
	for time.Now().Before(end) {
	}
}

// lastStampMs is the last millisecond of the last unit stamped (0: none,
// so that the next holder starts where this one could have, not at the
// fence); called with mu held.
func (g *LeasedGenerator) lastStampMs() int64 {
	if g.lastUnit < 0 {
		return 0
	}
	return g.layout.UnitStart(g.lastUnit+1) - 1
}

func (g *LeasedGenerator) leaseTarget(gr *grant, lastMs int64) string {
	return fmt.Sprintf("/v1/leases/%d?token=%s%s&last_timestamp_ms=%d", gr.workerID, url.QueryEscape(gr.token), g.poolQuery(), lastMs)
}

// keep renews on time and replaces a lost or expired lease.
func (g *LeasedGenerator) keep() {
	defer close(g.finished)
	for {
		g.mu.Lock()
		gr := g.grant
		wait := time.Duration(0)
		if !gr.lost {
			wait = gr.renewAt - bootNow()
		}
		g.mu.Unlock()
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-g.wake:
			}
		}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return
		}
		gr = g.grant
		lastMs := g.lastStampMs()
		target := g.leaseTarget(gr, lastMs)
		over, expired := gr.lost || bootNow() >= gr.deadline, !gr.lost
		g.mu.Unlock()
		if over {
			if expired && g.giveBack(g.stopped, gr, lastMs) == nil {
				// Given back with its last stamp: its worker ID comes back
				// sooner, and Close has nothing more to give.
				g.mu.Lock()
				gr.lost = true
				g.mu.Unlock()
			}
			g.replace()
			continue
		}
		sentAt := bootNow()
		timeout := gr.deadline - sentAt
		if timeout > g.client.Timeout() {
			timeout = g.client.Timeout()
		}
		body, err := g.client.request(g.stopped, http.MethodPut, target, timeout)
		var refused *RequestError
		var a leaseAnswer
		switch {
		case errors.As(err, &refused) && refused.Code == "lease_lost":
			g.mu.Lock()
			gr.lost = true
			g.mu.Unlock()
		case err == nil && json.Unmarshal(body, &a) == nil:
			g.mu.Lock()
			if bootNow() < gr.deadline { // a late answer revives nothing
				gr.deadline = sentAt + time.Duration(a.LeaseMs)*time.Millisecond
				gr.renewAt = sentAt + time.Duration(a.RenewAfterMs)*time.Millisecond
				if a.MaxTimestampMs > gr.fenceMs {
					gr.fenceMs = a.MaxTimestampMs
				}
			}
			g.mu.Unlock()
		default: // the deadline stays where it was; sooner than planned, again
			retry := (gr.deadline - bootNow()) / 10
			if retry < 50*time.Millisecond {
				retry = 50 * time.Millisecond
			} else if retry > time.Second {
				retry = time.Second
			}
			g.mu.Lock()
			gr.renewAt = bootNow() + retry
			g.mu.Unlock()
		}
	}
}

// replace takes a new lease in place of a lost or expired one.
func (g *LeasedGenerator) replace() {
	fresh, layout, err := g.take(g.stopped)
	if errors.Is(err, ErrClosed) { // the client was closed: nothing more to take
		<-g.wake
		return
	}
	if err == nil && layout != g.layout {
		_ = g.giveBack(context.Background(), fresh, 0)
		err = errors.New("snowflaked: the cluster's layout changed under the generator")
	}
	if err != nil {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-g.wake:
		}
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = g.giveBack(context.Background(), fresh, 0)
		return
	}
	g.grant, g.lastUnit, g.seq = fresh, -1, 0
	g.mu.Unlock()
}

func (g *LeasedGenerator) giveBack(ctx context.Context, gr *grant, lastMs int64) error {
	_, err := g.client.Request(ctx, http.MethodDelete, g.leaseTarget(gr, lastMs))
	var refused *RequestError
	if errors.As(err, &refused) && refused.Code == "lease_lost" {
		return nil // nothing to give back
	}
	return err
}

// Close stops making IDs, then gives the lease back with the last stamp
// used (the next holder starts above it). Its error is the give-back's if
// no replica took it: the lease then runs out by itself.
func (g *LeasedGenerator) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.wake)
	g.mu.Unlock()
	g.stop()
	<-g.finished
	g.mu.Lock()
	gr, lastMs := g.grant, g.lastStampMs()
	g.mu.Unlock()
	if gr.lost {
		return nil
	}
	return g.giveBack(ctx, gr, lastMs)
}
