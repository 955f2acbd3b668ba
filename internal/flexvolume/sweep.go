package flexvolume

import (
	"context"
	"time"

	"github.com/berthhq/berth/internal/retrysweep"
)

// Run undoes, until ctx ends, the mounts of pods for which alive is false: at once (the
// leftovers of a crash, or of a removal whose unmount failed), then every SweepInterval.
// A failed unmount is retried with a growing backoff and reported to Options.Failed each
// time; it is never forgotten. alive must be true for every pod the agent runs or starts
// (its checkpoint, written before a pod's volumes are mounted).
func (m *Manager) Run(ctx context.Context, alive func(pod string) bool) {
	retrysweep.Run(ctx, m.opts.SweepInterval, func(now time.Time) time.Time { return m.Sweep(ctx, alive, now) })
}

// Sweep makes one pass of Run at time now and returns when the next retry is due (zero
// when none is).
func (m *Manager) Sweep(ctx context.Context, alive func(pod string) bool, now time.Time) time.Time {
	recs, err := m.Records()
	if err != nil {
		m.log.Error("FlexVolume records", "err", err)
		return time.Time{}
	}
	return m.sweeper.Sweep(ctx, recs, now, func(ctx context.Context, rec Record) error {
		return m.sweepOne(ctx, rec, alive)
	})
}

// sweepOne undoes rec when its pod is gone, checked under the dir's lock so that a pod
// that starts again meanwhile keeps its mount.
func (m *Manager) sweepOne(ctx context.Context, rec Record, alive func(string) bool) error {
	unlock, err := m.lock(ctx, rec.Dir)
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
	m.log.Info("unmounting the FlexVolume of a pod this node no longer runs", "pod", cur.Pod, "dir", cur.Dir, "driver", cur.Driver)
	return m.teardown(ctx, cur)
}

// sweepFailed logs a failed unmount of a pod that is gone and tells Options.Failed.
func (m *Manager) sweepFailed(rec Record, attempt int, next time.Time, err error) {
	m.log.Error("cannot unmount the FlexVolume of a pod that is gone; will retry", "pod", rec.Pod, "dir", rec.Dir,
		"driver", rec.Driver, "attempt", attempt, "retryAt", next, "err", err)
	if m.opts.Failed != nil {
		m.opts.Failed(rec, attempt, err)
	}
}

// Pending is how many mounts of gone pods wait for a retry of their unmount.
func (m *Manager) Pending() int { return m.sweeper.Pending() }
