package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Client.
const (
	// DefaultMaxResponse bounds an answer: a patch that adds a label is a few hundred
	// bytes, and the largest object the API takes is about its body limit.
	DefaultMaxResponse = 4 << 20
	// DefaultMaxInFlight bounds the calls one hook has at once; a write that finds
	// them all busy waits for a turn within the hook's timeout.
	DefaultMaxInFlight = 32
	// DefaultMaxParallel bounds the validating calls one write makes at once: a
	// cluster may configure up to 1,024 hooks, and a write should not start a
	// goroutine and a connection for each.
	DefaultMaxParallel = 8
)

// Client calls hooks. Its zero value is not usable: make it with NewClient.
type Client struct {
	clusterCA   *x509.CertPool
	maxResponse int64
	maxInFlight int
	maxParallel int
	// forbidden says whether a dialed address (ip:port) is berth's own API, which no
	// hook may be, even through a name that resolves to it.
	forbidden func(addr string) bool
	observe   Observer

	mu    sync.Mutex
	conns map[string]*conn // by hook ID, URL and bundle
}

// conn is a hook's HTTP client and its turns.
type conn struct {
	http  *http.Client
	turns chan struct{}
}

// Observer hears of every call's outcome (metrics, events); it must not block.
type Observer func(h *Hook, req *Request, o Outcome, d time.Duration, err error)

// Outcome is how a call ended.
type Outcome string

// The outcomes.
const (
	Allowed Outcome = "allowed"
	Patched Outcome = "patched"
	Denied  Outcome = "denied"
	Failed  Outcome = "failed"
)

// Options configure a Client.
type Options struct {
	ClusterCA   *x509.CertPool
	MaxResponse int64
	MaxInFlight int
	// MaxParallel bounds one write's validating calls at once (DefaultMaxParallel).
	MaxParallel int
	Forbidden   func(addr string) bool
	Observe     Observer
}

// NewClient makes a client.
func NewClient(o Options) *Client {
	c := &Client{clusterCA: o.ClusterCA, maxResponse: o.MaxResponse, maxInFlight: o.MaxInFlight, maxParallel: o.MaxParallel,
		forbidden: o.Forbidden, observe: o.Observe, conns: map[string]*conn{}}
	if c.maxResponse <= 0 {
		c.maxResponse = DefaultMaxResponse
	}
	if c.maxInFlight <= 0 {
		c.maxInFlight = DefaultMaxInFlight
	}
	if c.maxParallel <= 0 {
		c.maxParallel = DefaultMaxParallel
	}
	if c.observe == nil {
		c.observe = func(*Hook, *Request, Outcome, time.Duration, error) {}
	}
	return c
}

// Forget drops the connections of hooks no longer configured (keep holds the current
// ones), so a changed or deleted hook's idle connections close.
func (c *Client) Forget(keep []*Hook) {
	live := map[string]bool{}
	for _, h := range keep {
		live[connKey(h)] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cn := range c.conns {
		if !live[k] {
			cn.http.CloseIdleConnections()
			delete(c.conns, k)
		}
	}
}

func connKey(h *Hook) string { return h.ID() + "\x00" + h.URL + "\x00" + h.bundle }

func (c *Client) connOf(h *Hook) *conn {
	key := connKey(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn, ok := c.conns[key]; ok {
		return cn
	}
	pool := h.Pool
	if pool == nil {
		pool = c.clusterCA
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: c.dialControl}
	tr := &http.Transport{
		Proxy:               nil, // a hook is called directly, never through the environment's proxy
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: c.maxInFlight,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	cn := &conn{turns: make(chan struct{}, c.maxInFlight), http: &http.Client{Transport: tr,
		// A redirect could send the review (the object, the user's policies) anywhere,
		// berth's own API included: it is an answer that is not a review.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c.conns[key] = cn
	return cn
}

func (c *Client) dialControl(_, address string, _ syscall.RawConn) error {
	if c.forbidden != nil && c.forbidden(address) {
		return fmt.Errorf("%s is berth's own API, never a webhook", address)
	}
	return nil
}

// CallError is a failed call: the hook is unreachable, slow, or its answer is not a
// review.
type CallError struct {
	Hook string
	Err  error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("calling admission webhook %s: %v", e.Hook, e.Err)
}
func (e *CallError) Unwrap() error { return e.Err }

// newUID is a random RFC 4122 version 4 UUID.
func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Call sends req to h (req.UID is set here) and returns its answer, or a *CallError.
func (c *Client) Call(ctx context.Context, h *Hook, req *Request) (*Response, error) {
	body, err := encodeReview(req)
	if err != nil {
		return nil, &CallError{Hook: h.ID(), Err: err}
	}
	return c.call(ctx, h, req, body)
}

// call sends body, req encoded, with a new uid (set in req too).
func (c *Client) call(ctx context.Context, h *Hook, req *Request, body reviewBody) (*Response, error) {
	req.UID = newUID()
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	cn := c.connOf(h)
	select {
	case cn.turns <- struct{}{}:
		defer func() { <-cn.turns }()
	case <-ctx.Done():
		return nil, &CallError{Hook: h.ID(), Err: fmt.Errorf("%d calls in flight, none ended within the timeout %s", c.maxInFlight, h.Timeout)}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body.with(req.UID)))
	if err != nil {
		return nil, &CallError{Hook: h.ID(), Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := cn.http.Do(hr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within the timeout %s", h.Timeout)
		}
		return nil, &CallError{Hook: h.ID(), Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResponse+1))
	switch {
	case err != nil:
		return nil, &CallError{Hook: h.ID(), Err: fmt.Errorf("reading the answer: %w", err)}
	case int64(len(data)) > c.maxResponse:
		return nil, &CallError{Hook: h.ID(), Err: fmt.Errorf("the answer is larger than %d bytes", c.maxResponse)}
	case resp.StatusCode != http.StatusOK:
		return nil, &CallError{Hook: h.ID(), Err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(string(bytes.TrimSpace(data)), 200))}
	}
	r, err := DecodeResponse(data, req.UID)
	if err != nil {
		return nil, &CallError{Hook: h.ID(), Err: err}
	}
	return r, nil
}
