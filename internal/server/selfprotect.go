package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
)

// The API protects itself before it knows who is asking (docs/security.md, "The API
// under load"). Requests of the cluster's own members (agents and servers, known by the
// client certificate the TLS handshake verified) pass; every other request is held to:
//   - a share of the server per source address: at most sourceRequests requests and
//     sourceStreams long-lived streams (watches, followed logs, exec) at once (429);
//   - a minimum body rate: after bodyGrace, a body must keep arriving at bodyMinRate
//     on average, or its read fails (a slow client holds nothing for long);
//   - a server-wide budget of body bytes being read (bodyBudget), of which one source
//     holds at most a quarter (503 beyond, with Retry-After);
// Together with authentication from the headers before any body is read (authorize,
// requireCredential), ReadHeaderTimeout and the HTTP/2 limits of run.go, and lists
// written object by object (list_stream.go), no client without credentials can hold
// more than a connection slot for ReadHeaderTimeout, and none with credentials can take
// the server's memory.

const (
	sourceRequests = 64
	sourceStreams  = 256
	bodyGrace      = 10 * time.Second
	bodyMinRate    = 4 << 10 // bytes per second, on average after bodyGrace, at least
	bodyBudget     = 256 << 20
	bodyChunk      = 64 << 10 // the budget is taken as a body is read, this much at a time
	// wholeLists is how many unpaged lists of non-members are written at once
	// (list_stream.go); the others wait their turn.
	wholeLists = 2
)

// member reports whether r comes from an agent or a server of this cluster.
func member(r *http.Request) bool {
	cert := httpapi.PeerCert(r.TLS)
	if cert == nil {
		return false
	}
	_, node := pki.NodeOf(cert)
	return node || pki.IsServer(cert)
}

// isStream reports whether r asks for a long-lived answer.
func isStream(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("watch") == "true" || q.Get("follow") == "true" || r.Header.Get("Upgrade") != "" ||
		r.Method == http.MethodPost && hasSuffix(r.URL.Path, "/exec")
}

func hasSuffix(p, s string) bool { return len(p) >= len(s) && p[len(p)-len(s):] == s }

// sourceLimits counts the requests and streams of each source in flight.
type sourceLimits struct {
	mu      sync.Mutex
	reqs    map[string]int
	streams map[string]int
}

func newSourceLimits() *sourceLimits {
	return &sourceLimits{reqs: map[string]int{}, streams: map[string]int{}}
}

// enter counts one request of src; false when src is at its limit.
func (l *sourceLimits) enter(src string, stream bool) (func(), bool) {
	m, limit := l.reqs, sourceRequests
	if stream {
		m, limit = l.streams, sourceStreams
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m[src] >= limit {
		return nil, false
	}
	m[src]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if m[src]--; m[src] <= 0 {
			delete(m, src)
		}
	}, true
}

// bodyPool is the server-wide budget of body bytes being read.
type bodyPool struct {
	mu       sync.Mutex
	free     int64
	perSrc   map[string]int64
	srcLimit int64
}

func newBodyPool(total int64) *bodyPool {
	return &bodyPool{free: total, perSrc: map[string]int64{}, srcLimit: total / 4}
}

// take reserves n bytes for src; false when the server or src has none left.
func (p *bodyPool) take(src string, n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free < n || p.perSrc[src]+n > p.srcLimit {
		return false
	}
	p.free -= n
	p.perSrc[src] += n
	return true
}

func (p *bodyPool) give(src string, n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free += n
	if p.perSrc[src] -= n; p.perSrc[src] <= 0 {
		delete(p.perSrc, src)
	}
}

// errBodyBudget is a body refused because the server reads too many bodies right now.
var errBodyBudget = errors.New("the server is reading too many request bodies right now")

// guardedBody is a request body read at a minimum rate, within the body budget.
type guardedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	pool  *bodyPool
	src   string
	start time.Time
	grace time.Duration
	read  int64 // bytes read so far
	held  int64 // budget held
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.read+int64(len(p)) > b.held {
		need := max(bodyChunk, b.read+int64(len(p))-b.held)
		if !b.pool.take(b.src, need) {
			return 0, errBodyBudget
		}
		b.held += need
	}
	// The whole body so far must have come at bodyMinRate after the grace period: the
	// next bytes are due by then.
	due := b.start.Add(b.grace + time.Duration(b.read+1)*time.Second/bodyMinRate)
	if err := b.rc.SetReadDeadline(due); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

// release gives the budget back and lifts the deadline (a handler that streams its
// answer must not inherit it).
func (b *guardedBody) release() {
	b.pool.give(b.src, b.held)
	b.held = 0
	b.rc.SetReadDeadline(time.Time{})
}

// protect applies the limits above to every request but the members'.
func (s *Server) protect(next http.Handler) http.Handler {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		if member(r) {
			next.ServeHTTP(w, r)
			return nil
		}
		src := sourceOf(r)
		leave, ok := s.sources.enter(src, isStream(r))
		if !ok {
			w.Header().Set("Retry-After", "1")
			return httpapi.Errorf(http.StatusTooManyRequests, "429: %s has too many requests in flight (at most %d, and %d streams); retry when some end",
				src, sourceRequests, sourceStreams)
		}
		defer leave()
		if r.Body != nil && r.Body != http.NoBody {
			b := &guardedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), pool: s.bodies, src: src, start: time.Now(), grace: s.bodyGrace}
			defer b.release()
			r.Body = b
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// bodyError turns what reading a guarded body failed with into the API's answer, or
// returns nil when it is not one of the guard's.
func bodyError(w http.ResponseWriter, err error) *httpapi.Error {
	switch {
	case errors.Is(err, errBodyBudget):
		w.Header().Set("Retry-After", "1")
		return httpapi.Errorf(http.StatusServiceUnavailable, "503: %v; retry shortly", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return httpapi.Errorf(http.StatusRequestTimeout, "408: the body came slower than %d bytes a second", bodyMinRate)
	}
	return nil
}
