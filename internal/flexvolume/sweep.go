package flexvolume

import (
	"context"
	"time"
)

// Backoff of the retries of a failed unmount.
const (
	retryMin = 5 * time.Second
	retryMax = 10 * time.Minute
)

// failure is the state of a record whose unmount failed.
type failure struct {
	attempts int
	next     time.Time
}

// Run undoes, until ctx ends, the mounts of pods for which alive is false: at once (the
// leftovers of a crash, or of a removal whose unmount failed), then every SweepInterval.
// A failed unmount is retried with a growing backoff and reported to Options.Failed each
// time; it is never forgotten. alive must be true for every pod the agent runs or starts
// (its checkpoint, written before a pod's volumes are mounted).
func (m *Manager) Run(ctx context.Context, alive func(pod string) bool) {
	for {
		next := m.Sweep(ctx, alive, time.Now())
		wait := m.opts.SweepInterval
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Sweep makes one pass of Run at time now and returns when the next retry is due (zero
// when none is).
func (m *Manager) Sweep(ctx context.Context, alive func(pod string) bool, now time.Time) time.Time {
	recs, err := m.Records()
	if err != nil {
		m.log.Error("FlexVolume records", "err", err)
		return time.Time{}
	}
	var next time.Time
	seen := map[string]bool{}
	for _, rec := range recs {
		seen[rec.Dir] = true
		if ctx.Err() != nil {
			return next
		}
		m.mu.Lock()
		f := m.failures[rec.Dir]
		m.mu.Unlock()
		if f != nil && now.Before(f.next) {
			next = earliest(next, f.next)
			continue
		}
		if due, failed := m.sweepOne(ctx, rec, alive, now); failed {
			next = earliest(next, due)
		}
	}
	m.mu.Lock()
	for dir := range m.failures { // records undone by another call
		if !seen[dir] {
			delete(m.failures, dir)
		}
	}
	m.mu.Unlock()
	return next
}

// sweepOne undoes rec when its pod is gone, checked under the dir's lock so that a pod
// that starts again meanwhile keeps its mount. It reports whether it failed, and when
// the next try is due.
func (m *Manager) sweepOne(ctx context.Context, rec Record, alive func(string) bool, now time.Time) (time.Time, bool) {
	unlock, err := m.lock(ctx, rec.Dir)
	if err != nil {
		return time.Time{}, false
	}
	defer unlock()
	if alive(rec.Pod) {
		m.clearFailure(rec.Dir)
		return time.Time{}, false
	}
	// The record may have changed or gone since it was listed.
	cur, ok, err := m.loadRecord(rec.Dir)
	if err == nil && !ok {
		m.clearFailure(rec.Dir)
		return time.Time{}, false
	}
	if err == nil {
		m.log.Info("unmounting the FlexVolume of a pod this node no longer runs", "pod", cur.Pod, "dir", cur.Dir, "driver", cur.Driver)
		err = m.teardown(ctx, cur)
	}
	if err == nil {
		m.clearFailure(rec.Dir)
		return time.Time{}, false
	}
	m.mu.Lock()
	f := m.failures[rec.Dir]
	if f == nil {
		f = &failure{}
		m.failures[rec.Dir] = f
	}
	f.attempts++
	f.next = now.Add(min(retryMin<<min(f.attempts-1, 16), retryMax))
	attempts, due := f.attempts, f.next
	m.mu.Unlock()
	m.log.Error("cannot unmount the FlexVolume of a pod that is gone; will retry", "pod", rec.Pod, "dir", rec.Dir,
		"driver", rec.Driver, "attempt", attempts, "retryAt", due, "err", err)
	if m.opts.Failed != nil {
		m.opts.Failed(rec, attempts, err)
	}
	return due, true
}

// Pending is how many mounts of gone pods wait for a retry of their unmount.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.failures)
}

func (m *Manager) clearFailure(dir string) {
	m.mu.Lock()
	delete(m.failures, dir)
	m.mu.Unlock()
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
