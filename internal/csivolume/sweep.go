package csivolume

import (
	"context"
	"time"

	"github.com/berthhq/berth/internal/retrysweep"
)

// Run undoes, until ctx ends, the publications of pods for which alive is false: at once
// (the leftovers of a crash, or of a removal whose teardown failed), then every
// SweepInterval. A failed teardown is retried with a growing backoff and reported to
// Options.Failed each time; it is never forgotten. alive must be true for every pod the
// agent runs or starts (its checkpoint, written before a pod's volumes are published).
func (m *Manager) Run(ctx context.Context, alive func(pod string) bool) {
	retrysweep.Run(ctx, m.opts.SweepInterval, func(now time.Time) time.Time { return m.Sweep(ctx, alive, now) })
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
	next := m.sweeper.Sweep(ctx, recs, now, func(ctx context.Context, rec Record) error {
		return m.sweepOne(ctx, rec, alive)
	})
	m.sweepStagings(ctx)
	return next
}

// sweepOne tears rec down when its pod is gone, checked under the dir's lock so that a
// pod that starts again meanwhile keeps its publication.
func (m *Manager) sweepOne(ctx context.Context, rec Record, alive func(string) bool) error {
	unlock, err := m.lock(ctx, pubLock(rec.Dir))
	if err != nil {
		return err
	}
	defer unlock()
	if alive(rec.Pod) {
		return nil
	}
	// The record may have changed or gone since it was listed.
	cur, ok, err := m.loadRecord(rec.Dir)
	if err != nil || !ok {
		return err
	}
	m.log.Info("unpublishing the CSI volume of a pod this node no longer runs", "pod", cur.Pod, "volume", cur.Volume, "dir", cur.Dir)
	return m.teardown(ctx, cur)
}

// sweepFailed logs a failed teardown of a pod that is gone and tells Options.Failed.
func (m *Manager) sweepFailed(rec Record, attempt int, next time.Time, err error) {
	m.log.Error("cannot unpublish the CSI volume of a pod that is gone; will retry", "pod", rec.Pod, "volume", rec.Volume,
		"dir", rec.Dir, "plugin", rec.Plugin, "attempt", attempt, "retryAt", next, "err", err)
	if m.opts.Failed != nil {
		m.opts.Failed(rec, attempt, err)
	}
}

// sweepStagings unstages the stagings that no publication uses. Each is checked under
// its lock, which a Publish takes only after recording its publication.
func (m *Manager) sweepStagings(ctx context.Context) {
	stagings, err := m.stagings()
	if err != nil {
		m.log.Error("CSI staging records", "err", err)
		return
	}
	for _, st := range stagings {
		if ctx.Err() != nil {
			return
		}
		if err := m.unstageUnused(ctx, nil, st.Plugin, st.ExternalID, ""); err != nil {
			m.log.Error("cannot unstage a CSI volume no pod uses; will retry", "plugin", st.Plugin, "path", st.Path, "err", err)
		}
	}
}

// Pending is how many publications of gone pods wait for a retry of their teardown.
func (m *Manager) Pending() int { return m.sweeper.Pending() }
