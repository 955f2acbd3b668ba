// Package retrysweep runs the sweeps that undo what the agent recorded on the node for
// pods that are gone (the FlexVolume mounts of internal/flexvolume, the CSI publications
// of internal/csivolume): a pass at once, for what a crash or a failed teardown left,
// then one at an interval. An undo that fails is retried after a backoff that doubles
// from RetryMin to RetryMax and is reported each time; it is never forgotten, since its
// record stays until an undo succeeds.
package retrysweep

import (
	"context"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/ctxtime"
)

// Backoff of the retries of a failed undo.
const (
	RetryMin = 5 * time.Second
	RetryMax = 10 * time.Minute
)

// Sweeper keeps, between passes, the failed undos of records of type R by their key.
type Sweeper[R any] struct {
	key    func(R) string
	failed func(r R, attempt int, next time.Time, err error)

	mu       sync.Mutex
	failures map[string]*failure
}

// failure is the state of a record whose undo failed.
type failure struct {
	attempts int
	next     time.Time
}

// New returns a Sweeper of records known by key. failed is told of each failed undo:
// attempt counts from 1, next is when the retry is due.
func New[R any](key func(R) string, failed func(r R, attempt int, next time.Time, err error)) *Sweeper[R] {
	return &Sweeper[R]{key: key, failed: failed, failures: map[string]*failure{}}
}

// Sweep makes one pass over recs, the records listed now, at time now: undo is called
// with each one but those whose retry is not due yet, and returns nil when it undid the
// record or found nothing to undo (its pod runs, the record went meanwhile). An error
// counts as a failed attempt, unless ctx ended: the agent is stopping, and the record
// stays for its next start. Sweep returns when the next retry is due (zero when none is).
func (s *Sweeper[R]) Sweep(ctx context.Context, recs []R, now time.Time, undo func(context.Context, R) error) time.Time {
	var next time.Time
	seen := make(map[string]bool, len(recs))
	for _, rec := range recs {
		key := s.key(rec)
		seen[key] = true
		if ctx.Err() != nil {
			return next
		}
		s.mu.Lock()
		f := s.failures[key]
		s.mu.Unlock()
		if f != nil && now.Before(f.next) {
			next = earliest(next, f.next)
			continue
		}
		err := undo(ctx, rec)
		switch {
		case err == nil:
			s.clear(key)
		case ctx.Err() == nil:
			next = earliest(next, s.fail(rec, key, now, err))
		}
	}
	s.mu.Lock()
	for key := range s.failures { // records undone by another call
		if !seen[key] {
			delete(s.failures, key)
		}
	}
	s.mu.Unlock()
	return next
}

// fail counts a failed undo of rec, reports it and returns when the retry is due.
func (s *Sweeper[R]) fail(rec R, key string, now time.Time, err error) time.Time {
	s.mu.Lock()
	f := s.failures[key]
	if f == nil {
		f = &failure{}
		s.failures[key] = f
	}
	f.attempts++
	f.next = now.Add(min(RetryMin<<min(f.attempts-1, 16), RetryMax))
	attempts, due := f.attempts, f.next
	s.mu.Unlock()
	if s.failed != nil {
		s.failed(rec, attempts, due, err)
	}
	return due
}

func (s *Sweeper[R]) clear(key string) {
	s.mu.Lock()
	delete(s.failures, key)
	s.mu.Unlock()
}

// Pending is how many records wait for a retry of their undo.
func (s *Sweeper[R]) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failures)
}

// Run calls sweep at once, then every interval, or sooner when the retry it returns is
// due earlier, until ctx ends.
func Run(ctx context.Context, interval time.Duration, sweep func(now time.Time) (next time.Time)) {
	for {
		next := sweep(time.Now())
		wait := interval
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 0))
		}
		if ctxtime.Sleep(ctx, wait) != nil {
			return
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
