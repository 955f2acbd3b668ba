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
	// pools are the HTTP clients by trust root (a hook's caBundle, "" for the cluster
	// CA): hooks served by one server share its connections and TLS sessions, so a burst
	// of writes through ten hooks of one server opens the connections of one, not ten.
	pools map[string]*http.Client
}

// conn is a hook's turns, and the HTTP client of its trust root.
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
		forbidden: o.Forbidden, observe: o.Observe, conns: map[string]*conn{}, pools: map[string]*http.Client{}}
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

// Forget drops the turns of hooks no longer configured (keep holds the current ones),
// and the connections of trust roots none of them uses, so a deleted hook's idle
// connections close.
func (c *Client) Forget(keep []*Hook) {
	live, roots := map[string]bool{}, map[string]bool{}
	for _, h := range keep {
		live[connKey(h)], roots[rootKey(h)] = true, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.conns {
		if !live[k] {
			delete(c.conns, k)
		}
	}
	for b, hc := range c.pools {
		if !roots[b] {
			hc.CloseIdleConnections()
			delete(c.pools, b)
		}
	}
}

func connKey(h *Hook) string { return h.ID() + "\x00" + h.URL + "\x00" + rootKey(h) }

// rootKey names the trust root that verifies h: its caBundle as written, or a pool
// given without one (only made in code), or "" for the cluster CA.
func rootKey(h *Hook) string {
	switch {
	case h.bundle != "":
		return "bundle:" + h.bundle
	case h.Pool != nil:
		return fmt.Sprintf("pool:%p", h.Pool)
	}
	return ""
}

func (c *Client) connOf(h *Hook) *conn {
	key := connKey(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn, ok := c.conns[key]; ok {
		return cn
	}
	root := rootKey(h)
	hc, ok := c.pools[root]
	if !ok {
		hc = c.newPool(h.Pool)
		c.pools[root] = hc
	}
	cn := &conn{turns: make(chan struct{}, c.maxInFlight), http: hc}
	c.conns[key] = cn
	return cn
}

// pooledHooks is how many hooks' calls in flight a trust root's pool keeps idle
// connections for, per server (beyond them a connection closes after its call).
const pooledHooks = 4

// newPool makes the HTTP client of one trust root (pool; nil for the cluster CA).
func (c *Client) newPool(pool *x509.CertPool) *http.Client {
	if pool == nil {
		pool = c.clusterCA
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: c.dialControl}
	tr := &http.Transport{
		Proxy:       nil, // a hook is called directly, never through the environment's proxy
		DialContext: dialer.DialContext,
		// The session cache resumes TLS sessions: a new connection to a hook's server
		// skips the certificate's verification and signature after the first.
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12,
			ClientSessionCache: tls.NewLRUClientSessionCache(256)},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: pooledHooks * c.maxInFlight,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{Transport: tr,
		// A redirect could send the review (the object, the user's policies) anywhere,
		// berth's own API included: it is an answer that is not a review.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
