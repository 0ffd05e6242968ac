package snowflaked

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The errors of the client: the same names and meanings in every client
// library (clients/README.md).

// RequestError is a 4xx answer: the request is one every replica refuses
// the same way (a bad tag or count, an unknown sequence, one with no number
// left). Asking again does not help; nothing was issued.
type RequestError struct {
	Status  int
	Code    string
	Message string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// UnavailableError says no replica issued within the time allowed.
// Failures maps each replica asked to its last error: a stable 503 code
// ("lease_expired", "sequence_unavailable", ...) or what went wrong with
// the connection. Asking again later may succeed.
type UnavailableError struct {
	Reason   string
	Failures map[string]string
}

func (e *UnavailableError) Error() string {
	urls := make([]string, 0, len(e.Failures))
	for url := range e.Failures {
		urls = append(urls, url)
	}
	sort.Strings(urls)
	parts := make([]string, 0, len(urls))
	for _, url := range urls {
		parts = append(parts, fmt.Sprintf("%s (%s)", url, e.Failures[url]))
	}
	if len(parts) == 0 {
		return e.Reason
	}
	return e.Reason + ": " + strings.Join(parts, ", ")
}

var (
	// ErrLeaseLost: the worker-ID lease is over (given back, or reclaimed
	// after it ran out unrenewed) and no new one was taken yet.
	ErrLeaseLost = errors.New("snowflaked: the worker-ID lease is lost; a new one is being taken")
	// ErrLeaseExpired: the leased generator makes no ID now: its lease's
	// deadline passed unrenewed, the clock is past the grant's time fence,
	// before its first timestamp, or stepped back further than it waits.
	ErrLeaseExpired = errors.New("snowflaked: the leased generator makes no ID now")
	// ErrClosed: the object was closed.
	ErrClosed = errors.New("snowflaked: closed")
)
