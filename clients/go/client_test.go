package snowflaked

import (
	"context"
	"errors"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const epochMs = 1735689600000

func newClient(t testing.TB, servers []string, timeout time.Duration) *Client {
	t.Helper()
	c, err := New(Config{Servers: servers, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestIDsInEveryForm(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, 5*time.Second)
	ctx := context.Background()
	ids, err := c.IDs(ctx, "orders", 500, FormDefault)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if len(seen) != 500 || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
		t.Fatalf("500 rising IDs, got %d distinct", len(seen))
	}
	id, err := c.ID(ctx, "orders")
	if ms := int64(id>>22) + epochMs; err != nil || absDiff(ms, time.Now().UnixMilli()) > 5000 {
		t.Fatalf("an ID of now: %d %v", id, err)
	}
	uuids, err := c.UUIDs(ctx, "orders", 2)
	if err != nil || len(uuids) != 2 || uuids[0][14] != '7' || uuids[0] == uuids[1] {
		t.Fatalf("UUIDv7s: %v %v", uuids, err)
	}
	opaque, err := c.IDs(ctx, "orders", 100, FormOpaque)
	distinct := map[uint64]bool{}
	for _, id := range opaque {
		if id >= 1<<63 {
			t.Fatalf("opaque ID %d: not 63 bits", id)
		}
		distinct[id] = true
	}
	if err != nil || len(distinct) != 100 || sort.SliceIsSorted(opaque, func(i, j int) bool { return opaque[i] < opaque[j] }) {
		t.Fatalf("opaque IDs: a keyed permutation, no order shows: %v", err)
	}
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestBadRequestsAreRequestErrorsAtOnce(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	ctx := context.Background()
	started := time.Now()
	var re *RequestError
	if _, err := c.IDs(ctx, "orders", 1000000, FormDefault); !errors.As(err, &re) || re.Status != 400 || re.Code != "bad_count" {
		t.Fatalf("bad_count: %v", err)
	}
	if _, err := c.NextSeq(ctx, "no-such-sequence"); !errors.As(err, &re) || re.Code != "unknown_sequence" {
		t.Fatalf("unknown_sequence: %v", err)
	}
	if _, err := c.ID(ctx, "no/such"); !errors.As(err, &re) {
		t.Fatalf("a bad tag: %v", err)
	}
	if time.Since(started) > 2*time.Second {
		t.Fatal("a 4xx was retried")
	}
}

func TestSequenceNumbersWithATemplateAndAPeriod(t *testing.T) {
	cl := cluster(t, "plain")
	cl.command(t, "seq create invoice --template INV-{n:06} --start 7")
	cl.command(t, "seq create daily --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}")
	c := newClient(t, cl.Servers, 5*time.Second)
	ctx := context.Background()
	n, err := c.NextSeq(ctx, "invoice")
	if err != nil || n.Number < 7 || n.Text != "INV-"+pad6(n.Number) || n.Period != "" {
		t.Fatalf("a printed number: %+v %v", n, err)
	}
	d, err := c.NextSeq(ctx, "daily")
	if err != nil || d.Period == "" || !strings.HasPrefix(d.Text, "D"+strings.ReplaceAll(d.Period, "-", "")+"-") {
		t.Fatalf("a number of its period: %+v %v", d, err)
	}
}

func pad6(n uint64) string {
	s := strings.Repeat("0", 6) + itoa(n)
	return s[len(s)-6:]
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestAKilledReplicaIsPassedOver(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, 5*time.Second)
	cl.command(t, "kill 0")
	defer cl.command(t, "ready")
	defer cl.command(t, "start 0")
	seen := map[uint64]bool{}
	for i := 0; i < 50; i++ {
		ids, err := c.IDs(context.Background(), "failover", 10, FormDefault)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			seen[id] = true
		}
	}
	if len(seen) != 500 {
		t.Fatalf("500 IDs, got %d", len(seen))
	}
}

func TestAFrozenReplicaCostsItsShareOfTheTimeOnly(t *testing.T) {
	// The frozen one asked first (the order fixed for this test): it gets
	// half of the 4 s, then the other answers at once.
	shuffle = func(n int) []int {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return order
	}
	defer func() { shuffle = rand.Perm }()
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, 4*time.Second)
	cl.command(t, "stop 0")
	defer cl.command(t, "ready")
	defer cl.command(t, "cont 0")
	started := time.Now()
	if _, err := c.ID(context.Background(), "frozen"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took < 1900*time.Millisecond || took > 3*time.Second {
		t.Fatalf("the call took %v", took)
	}
}

func TestRefusalsAreHonouredAndNamed(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, time.Second)
	cl.command(t, "zkstop")
	refused := func() bool {
		_, err := c.ID(context.Background(), "refused")
		var u *UnavailableError
		if !errors.As(err, &u) || len(u.Failures) != 2 {
			return false
		}
		for _, why := range u.Failures {
			if why != "lease_expired" {
				return false
			}
		}
		return true
	}
	eventually(t, 10*time.Second, "both refuse lease_expired", refused)
	cl.command(t, "zkcont")
	defer cl.command(t, "ready")
	patient := newClient(t, cl.Servers, 20*time.Second)
	if _, err := patient.ID(context.Background(), "refused"); err != nil {
		t.Fatal(err)
	}
}

func TestEveryReplicaGoneIsUnavailableAtOnce(t *testing.T) {
	// As `snowflaked get`: without a 503 there is nothing to wait for.
	c := newClient(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, 5*time.Second)
	started := time.Now()
	_, err := c.ID(context.Background(), "x")
	var u *UnavailableError
	if !errors.As(err, &u) || time.Since(started) > time.Second {
		t.Fatalf("%v after %v", err, time.Since(started))
	}
	for _, why := range u.Failures {
		if why != "connection refused" {
			t.Fatalf("%v", u.Failures)
		}
	}
}

func TestAStaleKeptAliveConnectionIsNotAFailure(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers[:1], 2*time.Second)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // several idle connections
		wg.Add(1)
		go func() { defer wg.Done(); c.IDs(context.Background(), "stale", 50, FormDefault) }()
	}
	wg.Wait()
	cl.command(t, "kill 0")
	cl.command(t, "start 0")
	defer cl.command(t, "ready")
	if _, err := c.ID(context.Background(), "stale"); err != nil {
		t.Fatal(err)
	}
}

func TestAContextEndsACall(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers[:1], 10*time.Second)
	cl.command(t, "stop 0") // silent: the call would take its whole timeout
	defer cl.command(t, "ready")
	defer cl.command(t, "cont 0")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	if _, err := c.ID(ctx, "x"); err == nil || time.Since(started) > 2*time.Second {
		t.Fatalf("%v after %v", err, time.Since(started))
	}
}

func TestTLSWithACAFile(t *testing.T) {
	cl := cluster(t, "tls")
	c, err := New(Config{Servers: cl.Servers, CACert: cl.CACert})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ids, err := c.IDs(context.Background(), "tls", 100, FormDefault); err != nil || len(ids) != 100 {
		t.Fatal(err)
	}
	untrusted := newClient(t, cl.Servers, time.Second)
	_, err = untrusted.ID(context.Background(), "tls")
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Fatal(err)
	}
	for _, why := range u.Failures {
		if !strings.Contains(why, "not trusted") {
			t.Fatalf("%v", u.Failures)
		}
	}
}

func TestOneClientServesManyGoroutines(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	var mu sync.Mutex
	seen := map[uint64]bool{}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				ids, err := c.IDs(context.Background(), "threads", 5, FormDefault)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != 800 {
		t.Fatalf("800 IDs, got %d", len(seen))
	}
}

func TestServersFromTheEnvironment(t *testing.T) {
	cl := cluster(t, "plain")
	t.Setenv("SNOWFLAKED_SERVERS", strings.Join(cl.Servers, ","))
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if strings.Join(c.Servers(), ",") != strings.Join(cl.Servers, ",") {
		t.Fatal(c.Servers())
	}
	if _, err := c.ID(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
}
