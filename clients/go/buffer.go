package snowflaked

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// BufferConfig says how a buffer fetches ahead.
type BufferConfig struct {
	// Batch is how many a request asks for (default 1000 for IDs, 100 for
	// sequence numbers; at most the daemons' http.max_batch).
	Batch int
	// LowWater: a refill is asked for once this many or fewer are left
	// (0: a quarter of Batch; negative: only once none is left).
	LowWater int
	// MaxAge: nothing older (counted from when its batch was asked for) is
	// handed out; older ones are dropped (default 1 s for IDs, 60 s for
	// sequence numbers).
	MaxAge time.Duration
	// Form of the IDs (IDBuffer only).
	Form Form
}

type batch[T any] struct {
	askedAt time.Time
	values  []T
}

// buffer is what IDBuffer and SeqBuffer share: batches fetched ahead by a
// goroutine and handed out oldest first, none older than maxAge.
type buffer[T any] struct {
	client   *Client
	fetch    func(ctx context.Context, n int) ([]T, error)
	cfg      BufferConfig
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced by the refill and Close: wakes the waiters
	wake     chan struct{} // one slot: a take or a waiter wakes the refill goroutine
	batches  []batch[T]
	next     int // into batches[0].values
	count    int
	wanted   bool // a take since the last fetch (or none yet): an idle buffer fetches nothing
	lastErr  error
	closed   bool
	stop     context.CancelFunc
	finished chan struct{}
}

func newBuffer[T any](c *Client, cfg BufferConfig, fetch func(context.Context, int) ([]T, error)) *buffer[T] {
	if cfg.LowWater == 0 {
		cfg.LowWater = cfg.Batch / 4
	} else if cfg.LowWater < 0 { // asked for none: refilled only when empty
		cfg.LowWater = 0
	}
	ctx, stop := context.WithCancel(context.Background())
	b := &buffer[T]{client: c, fetch: fetch, cfg: cfg, changed: make(chan struct{}), wake: make(chan struct{}, 1), stop: stop, finished: make(chan struct{}), wanted: true}
	go b.refill(ctx)
	return b
}

// broadcast wakes every waiter; called with mu held.
func (b *buffer[T]) broadcast() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// wakeRefill wakes the refill goroutine, if it waits (never blocks).
func (b *buffer[T]) wakeRefill() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *buffer[T]) dropStale(now time.Time) {
	for len(b.batches) > 0 && now.Sub(b.batches[0].askedAt) > b.cfg.MaxAge {
		b.count -= len(b.batches[0].values) - b.next
		b.batches = b.batches[1:]
		b.next = 0
	}
}

// Next hands out the next buffered value; with none left it waits for a
// batch (until ctx ends or the client's timeout), then returns the last
// fetch's error.
func (b *buffer[T]) Next(ctx context.Context) (T, error) {
	var zero T
	var timeout <-chan time.Time // made only when it must wait: not on the hot path
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return zero, ErrClosed
		}
		b.dropStale(time.Now())
		b.wanted = true
		if b.count > 0 {
			first := &b.batches[0]
			v := first.values[b.next]
			b.next++
			b.count--
			if b.next == len(first.values) {
				b.batches = b.batches[1:]
				b.next = 0
			}
			if b.count <= b.cfg.LowWater {
				b.wakeRefill()
			}
			b.mu.Unlock()
			return v, nil
		}
		b.wakeRefill()
		changed, lastErr := b.changed, b.lastErr
		b.mu.Unlock()
		var refused *RequestError
		if errors.As(lastErr, &refused) || errors.Is(lastErr, ErrClosed) {
			return zero, lastErr // waiting would not help
		}
		if timeout == nil {
			timer := time.NewTimer(b.client.Timeout())
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-timeout:
			if lastErr != nil {
				return zero, lastErr
			}
			return zero, &UnavailableError{Reason: "snowflaked: no batch came in time"}
		}
	}
}

// Len is how many values are buffered now.
func (b *buffer[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropStale(time.Now())
	return b.count
}

func (b *buffer[T]) refill(ctx context.Context) {
	defer close(b.finished)
	backoff := 50 * time.Millisecond
	for {
		b.mu.Lock()
		for !b.closed && (b.count > b.cfg.LowWater || !b.wanted) {
			// Wakes for a take, and when the oldest batch goes stale.
			wait := time.Hour
			if len(b.batches) > 0 {
				if wait = time.Until(b.batches[0].askedAt.Add(b.cfg.MaxAge)); wait < 10*time.Millisecond {
					wait = 10 * time.Millisecond
				}
			}
			b.mu.Unlock()
			timer := time.NewTimer(wait)
			select {
			case <-b.wake:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
			b.mu.Lock()
			b.dropStale(time.Now())
		}
		closed := b.closed
		b.wanted = false
		b.mu.Unlock()
		if closed {
			return
		}
		askedAt := time.Now()
		values, err := b.fetch(ctx, b.cfg.Batch)
		b.mu.Lock()
		if err != nil {
			b.lastErr = err // a waiting taker asks again (wanted): an idle buffer does not
			b.broadcast()
			b.mu.Unlock()
			if errors.Is(err, ErrClosed) { // the client was closed: nothing more to fetch
				return
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			continue
		}
		backoff = 50 * time.Millisecond
		b.lastErr = nil
		if len(values) > 0 {
			b.batches = append(b.batches, batch[T]{askedAt: askedAt, values: values})
			b.count += len(values)
		}
		b.broadcast()
		b.mu.Unlock()
	}
}

// Close stops the refill; what is buffered is dropped (unused IDs or
// numbers leave no duplicate, a gap at most).
func (b *buffer[T]) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.broadcast()
	b.mu.Unlock()
	b.wakeRefill()
	b.stop()
	<-b.finished
}

// IDBuffer hands out IDs of a tag fetched ahead in batches, none older
// than MaxAge. Safe for concurrent use.
type IDBuffer struct{ *buffer[uint64] }

// NewIDBuffer starts fetching IDs of tag ahead.
func NewIDBuffer(c *Client, tag string, cfg BufferConfig) *IDBuffer {
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	return &IDBuffer{newBuffer(c, cfg, func(ctx context.Context, n int) ([]uint64, error) {
		return c.IDs(ctx, tag, n, cfg.Form)
	})}
}

// SeqBuffer hands out numbers of a per-daemon sequence fetched ahead, as
// IDBuffer does. Safe for concurrent use.
type SeqBuffer struct{ *buffer[SeqNumber] }

// NewSeqBuffer starts fetching numbers of the per-daemon sequence tag
// ahead. Refused with a *RequestError, at the start and before each batch:
// a strict tag (code "strict_sequence": its numbers keep their real-time
// order only one request at a time), a tag that restarts each period
// ("periodic_sequence": a buffer would hand out the last period's numbers
// after the turn), and one the cluster does not list ("unknown_sequence").
func NewSeqBuffer(ctx context.Context, c *Client, tag string, cfg BufferConfig) (*SeqBuffer, error) {
	if err := checkBufferable(ctx, c, tag); err != nil {
		return nil, err
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Minute
	}
	first := true // only the refill goroutine fetches
	return &SeqBuffer{newBuffer(c, cfg, func(ctx context.Context, n int) ([]SeqNumber, error) {
		if err := checkBufferable(ctx, c, tag); err != nil {
			return nil, err
		}
		// A daemon lists a tag as periodic only once it has read its node:
		// the first batch is of one number, and a number that carries a
		// period is dropped (a gap of one) and refused.
		if first {
			n = 1
		}
		numbers, err := c.Seq(ctx, tag, n)
		for _, number := range numbers {
			if number.Period != "" {
				return nil, periodicRefusal(tag)
			}
		}
		first = first && err != nil
		return numbers, err
	})}, nil
}

func periodicRefusal(tag string) error {
	return &RequestError{Status: 409, Code: "periodic_sequence", Message: fmt.Sprintf("sequence %q restarts each period: ask Client.NextSeq", tag)}
}

// checkBufferable reads the cluster's /ready?for=seq, which lists each
// sequence: a strict one with "order": "strict", a periodic one with "reset".
func checkBufferable(ctx context.Context, c *Client, tag string) error {
	var ready struct {
		Sequences map[string]map[string]json.RawMessage `json:"sequences"`
	}
	if err := c.getJSON(ctx, "/ready?for=seq", &ready); err != nil {
		return err
	}
	entry, listed := ready.Sequences[tag]
	switch {
	case !listed:
		return &RequestError{Status: 404, Code: "unknown_sequence", Message: fmt.Sprintf("sequence %q is not listed by the cluster (yet)", tag)}
	case string(entry["order"]) == `"strict"`:
		return &RequestError{Status: 409, Code: "strict_sequence", Message: fmt.Sprintf("sequence %q is strict: ask Client.NextSeq for each number", tag)}
	case entry["reset"] != nil:
		return periodicRefusal(tag)
	}
	return nil
}
