package snowflaked

import (
	"context"
	"testing"
)

// Run by tests/bench/clients.py (scripts/bench-clients.sh), against a real
// cluster, with $SNOWFLAKED_BIN a Release build: one goroutine's IDs a
// second each way, the plain HTTP call the baseline.

func BenchmarkRemote(b *testing.B) {
	c := newClient(b, cluster(b, "plain").Servers, 0)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.ID(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuffered(b *testing.B) {
	c := newClient(b, cluster(b, "plain").Servers, 0)
	buffer := NewIDBuffer(c, "bench", BufferConfig{})
	defer buffer.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := buffer.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeased(b *testing.B) {
	c := newClient(b, cluster(b, "plain").Servers, 0)
	g, err := NewLeasedGenerator(context.Background(), c, "bench", LeaseConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(context.Background())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.NextID(); err != nil {
			b.Fatal(err)
		}
	}
}
