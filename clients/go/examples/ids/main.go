// Command ids prints N IDs, one a line, from the servers in
// $SNOWFLAKED_SERVERS (and $SNOWFLAKED_CACERT for https): straight from the
// service (remote), through a local buffer (buffered), or made here over a
// leased worker ID (leased).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	snowflaked "snowflaked/client"
)

func main() {
	mode := flag.String("mode", "remote", "remote, buffered or leased")
	count := flag.Int("count", 1, "how many IDs")
	tag := flag.String("tag", "example", "the IDs' tag")
	flag.Parse()
	if err := run(*mode, *count, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "ids:", err)
		os.Exit(1)
	}
}

func run(mode string, count int, tag string) error {
	ctx := context.Background()
	client, err := snowflaked.New(snowflaked.Config{})
	if err != nil {
		return err
	}
	defer client.Close()
	var next func() (uint64, error)
	switch mode {
	case "remote":
		next = func() (uint64, error) { return client.ID(ctx, tag) }
	case "buffered":
		buffer := snowflaked.NewIDBuffer(client, tag, snowflaked.BufferConfig{})
		defer buffer.Close()
		next = func() (uint64, error) { return buffer.Next(ctx) }
	case "leased":
		generator, err := snowflaked.NewLeasedGenerator(ctx, client, "ids-example", snowflaked.LeaseConfig{})
		if err != nil {
			return err
		}
		defer generator.Close(ctx)
		next = generator.NextID
	default:
		return fmt.Errorf("--mode %q: remote, buffered or leased", mode)
	}
	for i := 0; i < count; i++ {
		id, err := next()
		if err != nil {
			return err
		}
		fmt.Println(id)
	}
	return nil
}
