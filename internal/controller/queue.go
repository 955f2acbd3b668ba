package controller

import (
	"context"
	"sync"
	"time"
)

// queue is a deduplicating work queue with delayed adds: a key waiting (or due later) is
// held once, at its earliest time; one worker takes keys in due order.
type queue[K comparable] struct {
	mu      sync.Mutex
	due     map[K]time.Time
	wake    chan struct{}
	running map[K]bool // keys being processed; re-adds wait for them
	redo    map[K]time.Time
}

func newQueue[K comparable]() *queue[K] {
	return &queue[K]{due: map[K]time.Time{}, wake: make(chan struct{}, 1), running: map[K]bool{}, redo: map[K]time.Time{}}
}

// Add asks for key to be processed now.
func (q *queue[K]) Add(key K) { q.AddAt(key, time.Now()) }

// AddAfter asks for key to be processed after d.
func (q *queue[K]) AddAfter(key K, d time.Duration) { q.AddAt(key, time.Now().Add(d)) }

// AddAt asks for key to be processed at t (or earlier if already due earlier).
func (q *queue[K]) AddAt(key K, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.due
	if q.running[key] {
		target = q.redo
	}
	if cur, ok := target[key]; !ok || t.Before(cur) {
		target[key] = t
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Get blocks until a key is due (or ctx ends) and marks it running; call Done after.
func (q *queue[K]) Get(ctx context.Context) (K, bool) {
	for {
		q.mu.Lock()
		var best K
		var bestAt time.Time
		found := false
		for k, t := range q.due {
			if !found || t.Before(bestAt) {
				best, bestAt, found = k, t, true
			}
		}
		now := time.Now()
		if found && !bestAt.After(now) {
			delete(q.due, best)
			q.running[best] = true
			q.mu.Unlock()
			return best, true
		}
		q.mu.Unlock()
		wait := time.Hour
		if found {
			wait = bestAt.Sub(now)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			var zero K
			return zero, false
		case <-q.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Done ends the processing of key; an add made meanwhile is queued now.
func (q *queue[K]) Done(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.running, key)
	if t, ok := q.redo[key]; ok {
		delete(q.redo, key)
		if cur, ok := q.due[key]; !ok || t.Before(cur) {
			q.due[key] = t
		}
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}
