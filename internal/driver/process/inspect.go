package process

import (
	"context"

	"github.com/berthhq/berth/internal/driver"
)

// Inspect returns the task's current state, looking at /proc (and reaping the driver's
// own child) for a task recorded as running. While the task is busy in Start, Stop or
// Action, it returns the state last recorded rather than wait for them (Stop may take
// the whole grace period).
func (d *Driver) Inspect(ctx context.Context, id string) (driver.State, error) {
	if !d.locks.TryLock(id) {
		st, err := d.load(id)
		if err != nil {
			return driver.State{}, err
		}
		return st.public(), nil
	}
	defer d.locks.Unlock(id)
	st, err := d.loadCurrent(id)
	if err != nil {
		return driver.State{}, err
	}
	return st.public(), nil
}

// List returns every task of the driver's owner recorded in DataDir, running or ended,
// brought up to date like Inspect; the agent adopts the running ones by their labels.
// Another cluster's or node's tasks are not listed (owner.go).
func (d *Driver) List(ctx context.Context) ([]driver.State, error) {
	states, err := d.loadAll()
	if err != nil {
		return nil, err
	}
	out := make([]driver.State, 0, len(states))
	for _, s := range states {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !d.owner.Owns(s.Labels) {
			continue
		}
		st, err := d.Inspect(ctx, s.ID)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, st)
	}
	return out, nil
}
