package snowflaked

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A named pool of two worker IDs: a test sees who gets which.
var two = Layout{TimeBits: 41, WorkerBits: 1, SequenceBits: 12, Order: "time,datacenter,worker,sequence",
	TimeUnitMs: 1, EpochMs: epochMs}

func decode(id uint64, l Layout) (ms int64, worker uint64) {
	s, _ := l.check()
	return l.UnitStart(int64(id >> s.time)), id >> s.worker & (1<<l.WorkerBits - 1)
}

func lease(t *testing.T, c *Client, holder string, cfg LeaseConfig) *LeasedGenerator {
	t.Helper()
	g, err := NewLeasedGenerator(context.Background(), c, holder, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLeasedIDsRisingNoMoreThanTheLayoutAllowsInTheClustersIDSpace(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	g := lease(t, c, "go-test", LeaseConfig{})
	defer g.Close(context.Background())
	if g.Layout().WorkerBits != 10 {
		t.Fatalf("%+v", g.Layout())
	}
	const n = 200000
	started := time.Now()
	ids := make([]uint64, n)
	for i := range ids {
		id, err := g.NextID()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	elapsed := time.Since(started)
	for i, id := range ids {
		if _, w := decode(id, g.Layout()); w != g.WorkerID() || (i > 0 && id <= ids[i-1]) {
			t.Fatalf("ID %d: worker %d, or not rising", id, w)
		}
	}
	// 4,096 a millisecond at most: 200,000 take 49 ms or more.
	if elapsed < 48*time.Millisecond {
		t.Fatalf("%d IDs in %v: past the layout's limit", n, elapsed)
	}
	theirs, err := c.IDs(context.Background(), "mixed", 1000, FormDefault)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range theirs {
		if _, w := decode(id, g.Layout()); w == g.WorkerID() {
			t.Fatalf("a daemon's ID on our worker ID: %d", id)
		}
	}
}

func TestRenewedThroughAKilledDaemon(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, time.Second)
	g := lease(t, c, "go-renew", LeaseConfig{Duration: 1500 * time.Millisecond})
	defer g.Close(context.Background())
	worker := g.WorkerID()
	cl.command(t, "kill 0")
	defer cl.command(t, "ready")
	defer cl.command(t, "start 0")
	// Three leases long, paced: an ID a millisecond (at the layout's limit the
	// loop would take a core from the daemons that renew it, on a loaded host).
	for end := time.Now().Add(4500 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if _, err := g.NextID(); err != nil {
			t.Fatal(err)
		}
	}
	if g.WorkerID() != worker {
		t.Fatal("replaced, not renewed")
	}
}

func TestGivenBackOnCloseTheNextHolderStartsRightAbove(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	other := lease(t, c, "go-other", LeaseConfig{Pool: "two", Layout: &two})
	defer other.Close(context.Background())
	first := lease(t, c, "go-first", LeaseConfig{Pool: "two", Layout: &two})
	var last uint64
	for i := 0; i < 5000; i++ {
		id, err := first.NextID()
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	worker := first.WorkerID()
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The only free worker ID: the one given back, with its last stamp: the
	// next holder starts right above it (a named pool's first timestamp is a
	// whole second: it does not know the pool's unit), not at the lease's
	// fence (a whole lease ahead).
	next := lease(t, c, "go-next", LeaseConfig{Pool: "two", Layout: &two})
	defer next.Close(context.Background())
	lastMs, _ := decode(last, two)
	if firstMs := two.UnitStart(next.grant.firstUnit); next.WorkerID() != worker || firstMs != (lastMs/1000+1)*1000 {
		t.Fatalf("worker %d (given back %d), first timestamp %d after a last stamp at %d", next.WorkerID(), worker, firstMs, lastMs)
	}
}

// A holder in another process (this test binary, run again): it prints its
// worker ID, then IDs or refusals, one a line, until stdin closes.
func TestMain_holder(t *testing.T) {
	if os.Getenv("GO_TEST_HOLDER") == "" {
		t.Skip("run by the frozen-holder test only")
	}
	c, _ := New(Config{Servers: strings.Split(os.Getenv("GO_TEST_HOLDER"), ",")})
	g, err := NewLeasedGenerator(context.Background(), c, "go-frozen", LeaseConfig{Pool: "two", Layout: &two, Duration: time.Second})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println("worker", g.WorkerID())
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if id, err := g.NextID(); err != nil {
			fmt.Println("refused", err)
		} else {
			fmt.Println("id", id)
		}
	}
}

func TestFrozenPastItsLeaseItNeverReusesTheWorkerID(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, 5*time.Second)
	keeper := lease(t, c, "go-keeper", LeaseConfig{Pool: "two", Layout: &two})
	defer keeper.Close(context.Background())
	holder := exec.Command(os.Args[0], "-test.run=^TestMain_holder$", "-test.v=false")
	holder.Env = append(os.Environ(), "GO_TEST_HOLDER="+strings.Join(cl.Servers, ","))
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	lines := bufio.NewScanner(out)
	lines.Scan()
	fields := strings.Fields(lines.Text())
	if len(fields) != 2 || fields[0] != "worker" {
		t.Fatalf("%q", lines.Text())
	}
	worker, _ := strconv.ParseUint(fields[1], 10, 64)
	lines.Scan()
	holder.Process.Signal(syscall.SIGSTOP)
	var after *LeasedGenerator
	eventually(t, 20*time.Second, "the frozen holder's worker ID reclaimed", func() bool {
		g, err := NewLeasedGenerator(context.Background(), c, "go-after", LeaseConfig{Pool: "two", Layout: &two})
		after = g
		return err == nil
	})
	defer after.Close(context.Background())
	if after.WorkerID() != worker {
		t.Fatalf("got %d, the frozen one held %d", after.WorkerID(), worker)
	}
	theirs := map[uint64]bool{}
	var theirFirst int64
	for i := 0; i < 3000; i++ {
		id, err := after.NextID()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			theirFirst, _ = decode(id, two)
		}
		theirs[id] = true
	}
	holder.Process.Signal(syscall.SIGCONT)
	// Thawed, it refuses (its own deadline passed), then goes on under a new
	// lease: never an ID the new holder's range could make. (IDs printed
	// before the SIGSTOP took may come first.)
	refused := false
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 0 || f[0] == "PASS" || f[0] == "ok" {
			continue
		}
		refused = refused || f[0] == "refused"
		if f[0] == "id" {
			id, _ := strconv.ParseUint(f[1], 10, 64)
			ms, w := decode(id, two)
			if theirs[id] || (w == worker && ms >= theirFirst) {
				t.Fatalf("the thawed holder made %d on the worker ID another holds", id)
			}
		}
	}
	holder.Wait()
	if !refused {
		t.Fatal("thawed past its lease, it never refused")
	}
}

func TestAClockSteppedBackIsWaitedOutOrRefused(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	var offset atomic.Int64 // ms
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load()) * time.Millisecond) }
	g := lease(t, c, "go-stepped", LeaseConfig{Now: now})
	defer g.Close(context.Background())
	var made []uint64
	take := func(n int) error {
		for i := 0; i < n; i++ {
			id, err := g.NextID()
			if err != nil {
				return err
			}
			made = append(made, id)
		}
		return nil
	}
	if err := take(200); err != nil {
		t.Fatal(err)
	}
	offset.Store(-300) // back 300 ms: waited out
	if err := take(200); err != nil {
		t.Fatal(err)
	}
	offset.Store(-3300) // back 3 s more: refused, not waited
	if err := take(1); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("not refused: %v", err)
	}
	eventually(t, 10*time.Second, "IDs again once the clock is past the last stamp", func() bool { return take(1) == nil })
	for i := 1; i < len(made); i++ {
		if made[i] <= made[i-1] {
			t.Fatalf("ID %d after %d", made[i], made[i-1])
		}
	}
}

func TestANamedPoolsOwnLayoutInSonyflakesShape(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	sony := Layout{TimeBits: 39, SequenceBits: 8, WorkerBits: 4, Order: "time,sequence,worker", TimeUnitMs: 10, EpochMs: 1409529600000}
	g := lease(t, c, "go-sony", LeaseConfig{Pool: "sony4", Layout: &sony})
	defer g.Close(context.Background())
	seqs := map[uint64]bool{}
	var prev uint64
	for i := 0; i < 1000; i++ {
		id, err := g.NextID()
		if err != nil || id <= prev || id&0xF != g.WorkerID() {
			t.Fatalf("%d after %d: %v", id, prev, err)
		}
		seqs[id>>4&0xFF], prev = true, id
	}
	if len(seqs) != 256 {
		t.Fatalf("%d sequence values", len(seqs))
	}
	if _, err := NewLeasedGenerator(context.Background(), c, "x", LeaseConfig{Pool: "sony4"}); err == nil {
		t.Fatal("a named pool without its layout")
	}
}
