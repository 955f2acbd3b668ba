package httpapi

import (
	"net/http"
	"sync"
	"time"
)

// writeGuard cuts a stream off when one of its writes waits on the client for longer
// than its timeout. A write deadline set before each line and cleared once caught up
// cost two messages to the HTTP/2 connection's goroutine and a runtime timer made and
// stopped for every event sent, and the runtime walks its whole timer heap to clear the
// stopped ones (docs/benchmarks.md, "Timers"). The guard instead arms one timer of its
// own when a write starts and none is armed; when it fires it cuts the stream if a write
// has waited the timeout, waits for the rest if one is under way, and otherwise stays
// unarmed until the next write. A fired timer is out of the runtime's heap, so a busy
// stream costs at most one timer firing per timeout, an idle one none.
type writeGuard struct {
	rc      *http.ResponseController
	timeout time.Duration

	mu    sync.Mutex
	since time.Time   // when the write under way began (zero: none)
	timer *time.Timer // made at the first write
	armed bool        // timer will fire
	done  bool        // the handler returned: rc must not be used (over HTTP/2 it panics)
}

func newWriteGuard(rc *http.ResponseController, timeout time.Duration) *writeGuard {
	return &writeGuard{rc: rc, timeout: timeout}
}

// begin marks the start of a write.
func (g *writeGuard) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.since = time.Now()
	if g.armed || g.done {
		return
	}
	g.armed = true
	if g.timer == nil {
		g.timer = time.AfterFunc(g.timeout, g.check)
	} else {
		g.timer.Reset(g.timeout)
	}
}

// end marks that the stream's writes reached the client's connection (it flushed).
func (g *writeGuard) end() {
	g.mu.Lock()
	g.since = time.Time{}
	g.mu.Unlock()
}

// check runs when the timer fires.
func (g *writeGuard) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || g.since.IsZero() {
		g.armed = false
		return
	}
	if waited := time.Since(g.since); waited < g.timeout {
		g.timer.Reset(g.timeout - waited)
		return
	}
	// A deadline in the past takes effect at once: the waiting write fails (over HTTP/2
	// the stream is reset) and the handler returns.
	g.armed = false
	g.rc.SetWriteDeadline(time.Now())
}

// stop ends the guard; the handler calls it before it returns.
func (g *writeGuard) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.timer != nil {
		g.timer.Stop()
	}
}
