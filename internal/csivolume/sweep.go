package csivolume

import (
	"context"
	"time"
)

// Backoff of the retries of a failed teardown.
const (
	retryMin = 5 * time.Second
	retryMax = 10 * time.Minute
)

// failure is the state of a record whose teardown failed.
type failure struct {
	attempts int
	next     time.Time
}

// Run undoes, until ctx ends, the publications of pods for which alive is false: at once
// (the leftovers of a crash, or of a removal whose teardown failed), then every
// SweepInterval. A failed teardown is retried with a growing backoff and reported to
// Options.Failed each time; it is never forgotten. alive must be true for every pod the
// agent runs or starts (its checkpoint, written before a pod's volumes are published).
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
// when none is). It also unstages the stagings no publication uses (a crash between a
// staging's record and its publication's).
func (m *Manager) Sweep(ctx context.Context, alive func(pod string) bool, now time.Time) time.Time {
	recs, err := m.Records()
	if err != nil {
		m.log.Error("CSI publication records", "err", err)
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
	m.sweepStagings(ctx)
	return next
}

// sweepOne tears rec down when its pod is gone, checked under the dir's lock so that a
// pod that starts again meanwhile keeps its publication. It reports whether it failed,
// and when the next try is due.
func (m *Manager) sweepOne(ctx context.Context, rec Record, alive func(string) bool, now time.Time) (time.Time, bool) {
	unlock, err := m.lock(ctx, pubLock(rec.Dir))
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
		rec = cur
		m.log.Info("unpublishing the CSI volume of a pod this node no longer runs", "pod", rec.Pod, "volume", rec.Volume, "dir", rec.Dir)
		err = m.teardown(ctx, rec)
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
	m.log.Error("cannot unpublish the CSI volume of a pod that is gone; will retry", "pod", rec.Pod, "volume", rec.Volume,
		"dir", rec.Dir, "plugin", rec.Plugin, "attempt", attempts, "retryAt", due, "err", err)
	if m.opts.Failed != nil {
		m.opts.Failed(rec, attempts, err)
	}
	return due, true
}

// sweepStagings unstages the stagings that no publication uses. Each is checked under
// its lock, which a Publish takes only after recording its publication.
func (m *Manager) sweepStagings(ctx context.Context) {
	stagings, err := m.stagings()
	if err != nil {
		m.log.Error("CSI staging records", "err", err)
		return
	}
	for key, st := range stagings {
		if ctx.Err() != nil {
			return
		}
		if err := m.sweepStaging(ctx, key, st); err != nil {
			m.log.Error("cannot unstage a CSI volume no pod uses; will retry", "plugin", st.Plugin, "path", st.Path, "err", err)
		}
	}
}

func (m *Manager) sweepStaging(ctx context.Context, key string, st stageRecord) error {
	unlock, err := m.lock(ctx, stageLock(key))
	if err != nil {
		return err
	}
	defer unlock()
	recs, err := m.Records()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Plugin == st.Plugin && r.ExternalID == st.ExternalID {
			return nil
		}
	}
	c, ok := m.teardownClient(st.Plugin)
	if !ok {
		return errPluginMissing(st.Plugin)
	}
	return m.unstage(ctx, c, key)
}

// Pending is how many publications of gone pods wait for a retry of their teardown.
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
