//go:build !linux

package snowflaked

import "time"

var processStart = time.Now()

// bootNow falls back to Go's monotonic reading where CLOCK_BOOTTIME is not
// to be had: it stops during a suspend, and the time fence (wall clock)
// still holds (docs/api.md, the holder's contract, point 1).
func bootNow() time.Duration { return time.Since(processStart) }
