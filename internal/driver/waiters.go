package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// Waiters holds the Wait calls of a driver that learns of task ends from events (the
// Docker event stream, the fake driver's own changes): Add registers one, Notify hands a
// task's final state to every waiter of it. The zero value is ready to use.
type Waiters struct {
	mu sync.Mutex
	m  map[string]map[*waiter]struct{}
}

type waiter struct {
	ch   chan State // buffered: Notify never blocks
	once sync.Once
}

// Add registers a waiter for task id and returns its channel, which receives one State
// from Notify and is then closed, or is closed without a value when ctx ends or cancel
// is called. The caller registers before it looks at the task's current state, so that
// an end between the look and the registration is not missed; it then calls Notify
// itself when the task had already ended, or cancel when the look failed.
func (w *Waiters) Add(ctx context.Context, id string) (ch <-chan State, cancel func()) {
	wt := &waiter{ch: make(chan State, 1)}
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]map[*waiter]struct{}{}
	}
	if w.m[id] == nil {
		w.m[id] = map[*waiter]struct{}{}
	}
	w.m[id][wt] = struct{}{}
	w.mu.Unlock()
	// The waiter is dropped as soon as ctx ends, so abandoned Waits hold nothing.
	drop := func() {
		w.mu.Lock()
		if ws := w.m[id]; ws != nil {
			if _, ok := ws[wt]; ok {
				delete(ws, wt)
				if len(ws) == 0 {
					delete(w.m, id)
				}
				wt.once.Do(func() { close(wt.ch) })
			}
		}
		w.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, drop)
	return wt.ch, func() {
		stop()
		drop()
	}
}

// Notify delivers st (an ended task's state) to every waiter of task id and forgets them.
func (w *Waiters) Notify(id string, st State) {
	w.mu.Lock()
	ws := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	for wt := range ws {
		wt.once.Do(func() {
			wt.ch <- st
			close(wt.ch)
		})
	}
}

// Has reports whether task id has waiters.
func (w *Waiters) Has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m[id]) > 0
}

// Waiting returns the IDs of the tasks that have waiters, for a driver that must look
// at them again (its event stream broke, and ends may have been missed).
func (w *Waiters) Waiting() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.m))
	for id := range w.m {
		ids = append(ids, id)
	}
	return ids
}

// Gone is the state Wait delivers for a task the driver no longer has (removed, or its
// container deleted behind berth's back): no ID, not running, exit code -1.
func Gone() State {
	return State{Info: v4.ContainerInfo{Status: "exited", ExitCode: -1, Message: "the driver no longer has the task"}}
}

// Inspect is how a driver reads one task's state (Driver.Inspect).
type Inspect func(ctx context.Context, id string) (State, error)

// NotifyIfEnded inspects task id and, when it no longer runs or is gone, hands its state
// to its waiters: what a driver does on an event that may be a task's end. An error
// other than ErrNotFound is returned for the caller to log (none once ctx ended).
func (w *Waiters) NotifyIfEnded(ctx context.Context, id string, inspect Inspect) error {
	st, err := inspect(ctx, id)
	switch {
	case err == nil && !st.Running:
		w.Notify(id, st)
	case errors.Is(err, ErrNotFound):
		w.Notify(id, Gone())
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("inspect task %s: %w", id, err)
	}
	return nil
}

// RecheckAll runs NotifyIfEnded on every waited task, for a driver whose event stream
// broke and may have missed ends; errors go to warn.
func (w *Waiters) RecheckAll(ctx context.Context, inspect Inspect, warn func(id string, err error)) {
	for _, id := range w.Waiting() {
		if ctx.Err() != nil {
			return
		}
		if err := w.NotifyIfEnded(ctx, id, inspect); err != nil {
			warn(id, err)
		}
	}
}

// WaitFor is a Wait of a driver that learns of ends from events: a waiter is registered
// for id before the task is inspected, so an end between the two is not missed, and a
// task that has ended already is delivered at once. The driver's event stream must run.
func (w *Waiters) WaitFor(ctx context.Context, id string, inspect Inspect) (<-chan State, error) {
	ch, cancel := w.Add(ctx, id)
	st, err := inspect(ctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	if !st.Running {
		w.Notify(id, st)
	}
	return ch, nil
}
