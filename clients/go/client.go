// Package snowflaked is a client of snowflaked: IDs and sequence numbers
// from the service (Client), a local buffer of them (IDBuffer, SeqBuffer),
// and a generator in this process over a worker ID leased from the service
// (LeasedGenerator). Standard library only. Every type is safe for
// concurrent use; each has a Close.
package snowflaked

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Version is the server's version this client was made with.
const Version = "0.5.0"

// shuffle orders the replicas of a round (a test fixes it): each process
// its own order (Go 1.19's global source starts the same in every process).
var shuffle = func() func(int) []int {
	var mu sync.Mutex
	source := rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())<<32))
	return func(n int) []int {
		mu.Lock()
		defer mu.Unlock()
		return source.Perm(n)
	}
}()

// DefaultServer is asked when neither Config.Servers nor
// $SNOWFLAKED_SERVERS names a replica.
const DefaultServer = "http://127.0.0.1:8080"

// Config says which replicas a Client asks and how.
type Config struct {
	// Servers are replica URLs; empty: $SNOWFLAKED_SERVERS (comma-separated),
	// else DefaultServer.
	Servers []string
	// CACert is a PEM file of the CAs an https replica's certificate must
	// chain to; empty: $SNOWFLAKED_CACERT, else the system's CAs.
	CACert string
	// Timeout bounds a call, every replica and retry included (default 5 s);
	// a context's deadline, if sooner, bounds it too.
	Timeout time.Duration
}

// Form is how IDs are handed out: FormDefault (the tag's own), FormPlain,
// FormOpaque (a keyed permutation, a 63-bit number too).
type Form string

const (
	FormDefault Form = ""
	FormPlain   Form = "plain"
	FormOpaque  Form = "opaque"
)

// SeqNumber is a number of a dense sequence: Number as it is, Text as the
// tag's template prints it (the number in decimal without one), and the
// Period it belongs to ("2026-11-26") for a tag that restarts each period,
// else "".
type SeqNumber struct {
	Number uint64
	Text   string
	Period string
}

// Client asks a snowflaked cluster's replicas as `snowflaked get` does
// (docs/api.md#from-shell-scripts-snowflaked-get): in a random order, the
// next one at once on a 503 or a connection that fails, each given its
// share of the time left; when replicas said 503, again after the shortest
// Retry-After. Connections are kept alive. Safe for concurrent use.
type Client struct {
	servers []string
	timeout time.Duration
	http    *http.Client
	closing chan struct{}
	once    sync.Once
}

// New makes a Client.
func New(cfg Config) (*Client, error) {
	servers := append([]string(nil), cfg.Servers...)
	if len(servers) == 0 {
		for _, s := range strings.Split(os.Getenv("SNOWFLAKED_SERVERS"), ",") {
			if s = strings.TrimSpace(s); s != "" {
				servers = append(servers, s)
			}
		}
	}
	if len(servers) == 0 {
		servers = []string{DefaultServer}
	}
	for i, s := range servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("snowflaked: replica %q: http://HOST[:PORT] or https://HOST[:PORT]", s)
		}
		servers[i] = strings.TrimRight(s, "/")
	}
	cacert := cfg.CACert
	if cacert == "" {
		cacert = os.Getenv("SNOWFLAKED_CACERT")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.MaxIdleConnsPerHost = 64
	// Under the daemons' http.idle_timeout_ms (60 s): a request is never
	// sent on a connection the daemon is closing as idle.
	transport.IdleConnTimeout = 50 * time.Second
	if cacert != "" {
		pem, err := os.ReadFile(cacert)
		if err != nil {
			return nil, fmt.Errorf("snowflaked: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("snowflaked: CA file %s: no PEM certificate", cacert)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{servers: append([]string(nil), servers...), timeout: timeout,
		http: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // the daemons never redirect; a POST is never turned into a GET
		}}, closing: make(chan struct{})}, nil
}

// Servers are the replicas this client asks.
func (c *Client) Servers() []string { return append([]string(nil), c.servers...) }

// Timeout bounds each call.
func (c *Client) Timeout() time.Duration { return c.timeout }

// IDs returns count IDs of tag, plain or opaque (FormDefault: the tag's
// own form, which must not be uuid: see UUIDs).
func (c *Client) IDs(ctx context.Context, tag string, count int, form Form) ([]uint64, error) {
	texts, err := c.idTexts(ctx, tag, count, string(form))
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(texts))
	for i, t := range texts {
		if ids[i], err = strconv.ParseUint(t, 10, 64); err != nil {
			return nil, fmt.Errorf("snowflaked: %q is not a number: ask UUIDs for a tag in the uuid form", t)
		}
	}
	return ids, nil
}

// ID returns one ID of tag (see IDs).
func (c *Client) ID(ctx context.Context, tag string) (uint64, error) {
	ids, err := c.IDs(ctx, tag, 1, FormDefault)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// UUIDs returns count IDs of tag as RFC 9562 UUIDv7s.
func (c *Client) UUIDs(ctx context.Context, tag string, count int) ([]string, error) {
	return c.idTexts(ctx, tag, count, "uuid")
}

func (c *Client) idTexts(ctx context.Context, tag string, count int, form string) ([]string, error) {
	target := fmt.Sprintf("/id/%s?count=%d", url.PathEscape(tag), count)
	if form != "" {
		target += "&form=" + form
	}
	var body struct {
		IDs []string `json:"ids"`
	}
	if err := c.getJSON(ctx, target, &body); err != nil {
		return nil, err
	}
	if len(body.IDs) != count {
		return nil, fmt.Errorf("snowflaked: %d IDs asked for, %d answered", count, len(body.IDs))
	}
	return body.IDs, nil
}

// Seq returns the next count numbers of the dense sequence tag.
func (c *Client) Seq(ctx context.Context, tag string, count int) ([]SeqNumber, error) {
	var body struct {
		IDs     []string `json:"ids"`
		Numbers []string `json:"numbers"`
		Period  string   `json:"period"`
	}
	if err := c.getJSON(ctx, fmt.Sprintf("/seq/%s?count=%d", url.PathEscape(tag), count), &body); err != nil {
		return nil, err
	}
	numbers := body.Numbers
	if numbers == nil {
		numbers = body.IDs
	}
	if len(body.IDs) != count || len(numbers) != count {
		return nil, fmt.Errorf("snowflaked: %d numbers asked for, %d answered", count, len(body.IDs))
	}
	out := make([]SeqNumber, len(body.IDs))
	for i := range body.IDs {
		n, err := strconv.ParseUint(numbers[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("snowflaked: sequence number %q: %w", numbers[i], err)
		}
		out[i] = SeqNumber{Number: n, Text: body.IDs[i], Period: body.Period}
	}
	return out, nil
}

// NextSeq returns the next number of the sequence tag.
func (c *Client) NextSeq(ctx context.Context, tag string) (SeqNumber, error) {
	n, err := c.Seq(ctx, tag, 1)
	if err != nil {
		return SeqNumber{}, err
	}
	return n[0], nil
}

func (c *Client) getJSON(ctx context.Context, target string, into any) error {
	body, err := c.Request(ctx, http.MethodGet, target)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("snowflaked: answer to %s: %w", target, err)
	}
	return nil
}

// Request sends method target to the replicas in turn until one answers
// 2xx, whose body it returns. A 4xx is a *RequestError at once; no 2xx
// within the timeout (or ctx's deadline) is an *UnavailableError.
func (c *Client) Request(ctx context.Context, method, target string) ([]byte, error) {
	return c.request(ctx, method, target, c.timeout)
}

func (c *Client) request(ctx context.Context, method, target string, timeout time.Duration) ([]byte, error) {
	select {
	case <-c.closing:
		return nil, ErrClosed
	default:
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	failures := map[string]string{}
	for {
		order := shuffle(len(c.servers))
		var retryAfter time.Duration = -1 // the shortest Retry-After of this round
		for i, at := range order {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			// An even share of the time left for each replica not yet asked,
			// so one that hangs cannot use up the others' time.
			share := left / time.Duration(len(order)-i)
			server := c.servers[at]
			status, header, body, err := c.send(ctx, method, server+target, share)
			ownerError := ""
			if err == nil {
				if owner := namedOwner(status, body, server); owner != "" {
					// A strict sequence's owner: asked once, within the share;
					// when it does not answer, the refusal stands.
					s, h, b, ownerErr := c.send(ctx, method, owner+target, time.Until(deadline.Add(-left+share)))
					if ownerErr == nil {
						status, header, body = s, h, b
					} else {
						ownerError = fmt.Sprintf(" (its owner %s: %s)", owner, describe(ownerErr))
					}
				}
			}
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return nil, ctx.Err()
				}
				failures[server] = describe(err)
				continue
			}
			if status >= 200 && status < 300 {
				if !json.Valid(body) {
					failures[server] = "an answer that is not JSON"
					continue
				}
				return body, nil
			}
			code, message := errorOf(status, body)
			if status == http.StatusServiceUnavailable {
				failures[server] = code + ownerError
				if wait := retryAfterOf(header); retryAfter < 0 || wait < retryAfter {
					retryAfter = wait
				}
				continue
			}
			if status >= 400 && status < 500 && status != http.StatusRequestTimeout {
				return nil, &RequestError{Status: status, Code: code, Message: message}
			}
			failures[server] = fmt.Sprintf("%d %s", status, code)
		}
		// Nobody issued. A replica that said 503 said when to ask again;
		// without one (all down or silent) there is nothing to wait for.
		if retryAfter < 0 || time.Now().Add(retryAfter).After(deadline) {
			return nil, &UnavailableError{Reason: fmt.Sprintf("snowflaked: no replica answered within %d ms", timeout.Milliseconds()), Failures: failures}
		}
		if retryAfter < 50*time.Millisecond {
			retryAfter = 50 * time.Millisecond
		}
		timer := time.NewTimer(retryAfter)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-c.closing:
			timer.Stop()
			return nil, ErrClosed
		}
	}
}

// namedOwner is the URL of the owner a strict tag's 503 not_owner names
// (without "owner_url", in the scheme of the replica that refused).
func namedOwner(status int, body []byte, refusedBy string) string {
	if status != http.StatusServiceUnavailable {
		return ""
	}
	var refusal struct {
		Error    string  `json:"error"`
		Owner    *string `json:"owner"`
		OwnerURL *string `json:"owner_url"`
	}
	if json.Unmarshal(body, &refusal) != nil || refusal.Error != "not_owner" {
		return ""
	}
	switch {
	case refusal.OwnerURL != nil && *refusal.OwnerURL != "":
		return strings.TrimRight(*refusal.OwnerURL, "/")
	case refusal.Owner != nil && *refusal.Owner != "":
		return refusedBy[:strings.Index(refusedBy, "://")+3] + *refusal.Owner
	}
	return ""
}

func (c *Client) send(ctx context.Context, method, url string, timeout time.Duration) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

// Close ends the kept-alive connections; calls waiting out a Retry-After
// end with ErrClosed, and the client takes no more.
func (c *Client) Close() {
	c.once.Do(func() {
		close(c.closing)
		c.http.CloseIdleConnections()
	})
}

func describe(err error) string {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid):
		return "TLS: the replica's certificate is not trusted: " + unwrapAll(err).Error()
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	return unwrapAll(err).Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func unwrapAll(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func errorOf(status int, body []byte) (string, string) {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error, e.Message
	}
	text := string(body)
	if len(text) > 200 {
		text = text[:200]
	}
	return strconv.Itoa(status), text
}

func retryAfterOf(h http.Header) time.Duration {
	seconds, err := strconv.ParseFloat(h.Get("Retry-After"), 64)
	if err != nil || seconds < 0 {
		return time.Second
	}
	return time.Duration(seconds * float64(time.Second))
}
