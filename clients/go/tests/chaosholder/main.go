// Command chaosholder is the chaos runner's lease holder made of this
// library's LeasedGenerator (tests/chaos/holders.hpp; `chaos_runner
// --holder-program`): the arguments of tests/holders/lease_holder, the same
// behaviour. It makes IDs in batches and writes each batch to --out, one ID
// a line, before it makes the next; SIGTERM closes the generator (the lease
// given back with its last stamp) and exits 0.
//
// The chaos runner shifts every process's wall clock with libfaketime,
// which a Go program (reading the clock through the vDSO, not libc) does
// not see: the shift, $FAKETIME ("+S.mmm" or "-S.mmm"), is applied here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	snowflaked "snowflaked/client"
)

func main() {
	servers := flag.String("servers", "", "PORT[,PORT...] on 127.0.0.1")
	out := flag.String("out", "", "the file the IDs are appended to")
	holder := flag.String("holder", "lease-holder", "the lease's holder name")
	durationMs := flag.Int64("duration-ms", 1500, "the lease asked for")
	batch := flag.Int("batch", 20, "IDs a batch")
	pauseMs := flag.Int64("pause-ms", 5, "pause between batches")
	timeoutMs := flag.Int64("timeout-ms", 2000, "a request's time for every daemon")
	flag.Parse()
	if *servers == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	var urls []string
	for _, p := range strings.Split(*servers, ",") {
		urls = append(urls, "http://127.0.0.1:"+p)
	}
	shift, err := fakeTimeShift(os.Getenv("FAKETIME"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	now := func() time.Time { return time.Now().Add(shift) }
	file, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var stopping atomic.Bool
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() { <-terms; stopping.Store(true) }()

	client, _ := snowflaked.New(snowflaked.Config{Servers: urls, Timeout: time.Duration(*timeoutMs) * time.Millisecond})
	var gen *snowflaked.LeasedGenerator
	for !stopping.Load() {
		if gen == nil {
			gen, err = snowflaked.NewLeasedGenerator(context.Background(), client, *holder,
				snowflaked.LeaseConfig{Duration: time.Duration(*durationMs) * time.Millisecond, Now: now})
			if err != nil {
				fmt.Fprintln(os.Stderr, "no lease:", err)
				gen = nil
				time.Sleep(200 * time.Millisecond)
				continue
			}
			fmt.Fprintln(os.Stderr, "took worker ID", gen.WorkerID())
		}
		var lines strings.Builder
		for i := 0; i < *batch; i++ {
			id, err := gen.NextID()
			if err != nil {
				if !errors.Is(err, snowflaked.ErrLeaseExpired) && !errors.Is(err, snowflaked.ErrLeaseLost) {
					fmt.Fprintln(os.Stderr, "unexpected:", err)
					os.Exit(1)
				}
				fmt.Fprintln(os.Stderr, "no ID:", err)
				break
			}
			lines.WriteString(strconv.FormatUint(id, 10) + "\n")
		}
		if lines.Len() > 0 {
			if _, err := file.WriteString(lines.String()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		time.Sleep(time.Duration(*pauseMs) * time.Millisecond)
	}
	if gen != nil {
		if err := gen.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "give-back:", err) // not given back: it runs out by itself
		}
	}
	file.Close()
}

// fakeTimeShift reads libfaketime's relative form: "+12.345", "-0.5", "".
func fakeTimeShift(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	seconds, err := strconv.ParseFloat(text, 64)
	if err != nil || (text[0] != '+' && text[0] != '-') {
		return 0, fmt.Errorf("FAKETIME %q: only the relative form (+S or -S) is understood", text)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
