package httpapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that records the write deadlines set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	mu        sync.Mutex
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) set() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.deadlines...)
}

// The guard cuts a stream whose write waits longer than its timeout (a deadline in the
// past, at once), and sets no deadline at all on a stream whose writes complete, however
// many; once stopped it touches the writer no more.
func TestWriteGuard(t *testing.T) {
	const timeout = 40 * time.Millisecond
	cases := []struct {
		name    string
		writes  func(g *writeGuard)
		wantCut bool
	}{
		{"a write that waits", func(g *writeGuard) { g.begin() }, true},
		{"writes that complete", func(g *writeGuard) {
			for range 50 {
				g.begin()
				time.Sleep(timeout / 10)
				g.end()
			}
		}, false},
		{"a write that waits after others completed", func(g *writeGuard) {
			for range 5 {
				g.begin()
				g.end()
			}
			time.Sleep(2 * timeout)
			g.begin()
		}, true},
		{"stopped while a write waits", func(g *writeGuard) { g.begin(); g.stop() }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			g := newWriteGuard(http.NewResponseController(w), timeout)
			c.writes(g)
			if c.wantCut {
				for end := time.Now().Add(10 * time.Second); len(w.set()) == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(end) {
						t.Fatal("the waiting write was not cut off in 10 s")
					}
				}
				if d := w.set(); len(d) != 1 || !d[0].Before(time.Now()) {
					t.Fatalf("deadlines set: %v, want one in the past", d)
				}
			} else {
				time.Sleep(4 * timeout)
				if d := w.set(); len(d) != 0 {
					t.Fatalf("deadlines set: %v, want none", d)
				}
			}
			g.stop()
			n := len(w.set())
			time.Sleep(2 * timeout)
			if len(w.set()) != n {
				t.Fatal("the guard set a deadline after it stopped")
			}
		})
	}
}
