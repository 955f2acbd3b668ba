package controller

import (
	"log/slog"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// recorder writes events for a controller and remembers what it reported, so a state
// that persists (a back-off, an unplaceable instance) is reported once, not on every look.
type recorder struct {
	store *store.Store
	log   *slog.Logger

	mu       sync.Mutex
	reported map[string]string // id -> last value reported
}

func newRecorder(st *store.Store, log *slog.Logger) *recorder {
	return &recorder{store: st, log: log, reported: map[string]string{}}
}

// record queues one event for the store's event writer (store.QueueEvent): the
// controller never waits for it, and a failure is the writer's to log: events are a view.
func (r *recorder) record(e v4.Event) {
	e.Time = time.Now().UTC()
	r.store.QueueEvent(e)
}

// recordOnce records e unless dedup was the last value recorded for id.
func (r *recorder) recordOnce(id, dedup string, e v4.Event) {
	if r.swap(id, dedup) == dedup {
		return
	}
	r.record(e)
}

// swap stores value for id and returns the previous one ("" when none).
func (r *recorder) swap(id, value string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.reported[id]
	r.reported[id] = value
	return prev
}

// lookup returns what was last stored for id.
func (r *recorder) lookup(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.reported[id]
	return v, ok
}

func (r *recorder) forget(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		delete(r.reported, id)
	}
}
