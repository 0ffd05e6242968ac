package snowflaked

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestIDsComeFromTheBufferUniqueAndRisingPerDaemon(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	b := NewIDBuffer(c, "buffered", BufferConfig{Batch: 200})
	defer b.Close()
	seen := map[uint64]bool{}
	last := map[uint64]uint64{} // worker ID -> its last ID
	for i := 0; i < 2000; i++ {
		id, err := b.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		worker := id >> 12 & 1023
		if seen[id] || id <= last[worker] {
			t.Fatalf("%d: repeated or not rising for worker %d", id, worker)
		}
		seen[id], last[worker] = true, id
	}
}

func TestNoIDOlderThanTheBoundIsHandedOut(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	maxAge := 200 * time.Millisecond
	b := NewIDBuffer(c, "aged", BufferConfig{Batch: 1000, LowWater: -1, MaxAge: maxAge})
	defer b.Close()
	var oldest int64
	for i := 0; i < 60; i++ { // paced slower than a batch lasts: batches go stale while held
		// Its age when Next began: the buffer judges it later, so at most maxAge (counted from
		// when its batch was asked for, before the daemon stamped it), plus the millisecond its
		// stamp is floored to and one for the wall clock's slew. A reading after the call would add whatever a loaded host delays.
		before := time.Now().UnixMilli()
		id, err := b.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if age := before - (int64(id>>22) + epochMs); age > oldest {
			oldest = age
		}
		time.Sleep(10 * time.Millisecond)
	}
	if oldest > maxAge.Milliseconds()+2 {
		t.Fatalf("an ID %d ms old handed out", oldest)
	}
}

func TestABufferOverABadTagReturnsTheRefusalAtOnce(t *testing.T) {
	c := newClient(t, cluster(t, "plain").Servers, 5*time.Second)
	b := NewIDBuffer(c, "no/such", BufferConfig{})
	defer b.Close()
	started := time.Now()
	var re *RequestError
	// The first Next may come before the first fetch failed: it waits for it.
	if _, err := b.Next(context.Background()); !errors.As(err, &re) || time.Since(started) > 3*time.Second {
		t.Fatalf("%v after %v", err, time.Since(started))
	}
}

func TestSequenceNumbersBufferedButNeverAStrictPeriodicOrUnknownTags(t *testing.T) {
	cl := cluster(t, "plain")
	cl.command(t, "seq create tickets")
	cl.command(t, "seq create chat --order strict")
	cl.command(t, "seq create days --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}")
	c := newClient(t, cl.Servers, 5*time.Second)
	ctx := context.Background()
	var re *RequestError
	if _, err := NewSeqBuffer(ctx, c, "never-created", BufferConfig{}); !errors.As(err, &re) || re.Code != "unknown_sequence" {
		t.Fatalf("an unknown tag buffered: %v", err)
	}
	var b *SeqBuffer
	eventually(t, 10*time.Second, "tickets listed", func() bool { // by each daemon's next look
		var err error
		b, err = NewSeqBuffer(ctx, c, "tickets", BufferConfig{Batch: 20})
		return err == nil
	})
	defer b.Close()
	seen := map[uint64]bool{}
	for i := 0; i < 100; i++ {
		n, err := b.Next(ctx)
		if err != nil || seen[n.Number] {
			t.Fatalf("%+v %v", n, err)
		}
		seen[n.Number] = true
	}
	for tag, code := range map[string]string{"chat": "strict_sequence", "days": "periodic_sequence"} {
		eventually(t, 10*time.Second, tag+" refused "+code, func() bool {
			b, err := NewSeqBuffer(ctx, c, tag, BufferConfig{})
			if err == nil { // listed, its kind not known yet: the first batch tells
				_, err = b.Next(ctx)
				b.Close()
			}
			return errors.As(err, &re) && re.Code == code
		})
	}
}

func TestAnIdleBufferFetchesNothing(t *testing.T) {
	cl := cluster(t, "plain")
	c := newClient(t, cl.Servers, 5*time.Second)
	b := NewIDBuffer(c, "idle", BufferConfig{Batch: 10, LowWater: 2, MaxAge: 50 * time.Millisecond})
	defer b.Close()
	if _, err := b.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The take asks for one refill (its batch for the next take), which goes
	// stale too; then nothing more.
	eventually(t, 5*time.Second, "the refill after the take, gone stale", func() bool {
		return issued(t, cl, "idle") == 20 && b.Len() == 0
	})
	time.Sleep(500 * time.Millisecond) // the span over which an idle buffer must not fetch
	if after := issued(t, cl, "idle"); after != 20 {
		t.Fatalf("%v IDs issued, not 20", after)
	}
}

// issued is how many IDs of tag the daemons issued, by their metrics.
func issued(t *testing.T, cl *testCluster, tag string) float64 {
	total := 0.0
	prefix := `snowflake_tag_ids_issued_total{tag="` + tag + `"} `
	for _, server := range cl.Servers {
		resp, err := http.Get(server + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, prefix) {
				v, _ := strconv.ParseFloat(strings.TrimPrefix(line, prefix), 64)
				total += v
			}
		}
	}
	return total
}
