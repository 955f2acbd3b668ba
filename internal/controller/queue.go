package controller

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// queue is a deduplicating work queue with delayed adds: a key waiting (or due later) is
// held once, at its earliest time, in a min-heap by due time, so taking the next key costs
// O(log n) however many keys wait. A key being processed is never handed out twice: an
// add made meanwhile waits for its Done.
type queue[K comparable] struct {
	mu      sync.Mutex
	due     dueHeap[K]
	ready   readyHeap[K]      // keys due now, by priority (queue_ready.go)
	prio    func(K) int32     // a key's priority when it becomes due; nil: all 0
	index   map[K]*dueItem[K] // the keys in due and ready
	wake    chan struct{}
	running map[K]bool // keys being processed; re-adds wait for them
	redo    map[K]time.Time
}

// dueItem is a key waiting in the heap.
type dueItem[K comparable] struct {
	key   K
	at    time.Time
	pos   int
	ready bool  // in ready, not due
	prio  int32 // set when it became ready
}

// dueHeap orders waiting keys by due time (container/heap).
type dueHeap[K comparable] []*dueItem[K]

func (h dueHeap[K]) Len() int           { return len(h) }
func (h dueHeap[K]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *dueHeap[K]) Push(x any) {
	it := x.(*dueItem[K])
	it.pos = len(*h)
	*h = append(*h, it)
}
func (h *dueHeap[K]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

func newQueue[K comparable]() *queue[K] {
	return &queue[K]{index: map[K]*dueItem[K]{}, wake: make(chan struct{}, 1), running: map[K]bool{}, redo: map[K]time.Time{}}
}

// Len is the number of keys waiting, due now or later.
func (q *queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.due) + len(q.ready)
}

// Add asks for key to be processed now.
func (q *queue[K]) Add(key K) { q.AddAt(key, time.Now()) }

// AddAfter asks for key to be processed after d.
func (q *queue[K]) AddAfter(key K, d time.Duration) { q.AddAt(key, time.Now().Add(d)) }

// AddAt asks for key to be processed at t (or earlier if already due earlier).
func (q *queue[K]) AddAt(key K, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[key] {
		if cur, ok := q.redo[key]; !ok || t.Before(cur) {
			q.redo[key] = t
		}
		return // Done queues it
	}
	q.schedule(key, t)
}

// schedule puts key in the heap at t, or moves it earlier; q.mu is held.
func (q *queue[K]) schedule(key K, t time.Time) {
	if it, ok := q.index[key]; ok {
		if it.ready || !t.Before(it.at) {
			return // already due, or due earlier
		}
		it.at = t
		heap.Fix(&q.due, it.pos)
	} else {
		it := &dueItem[K]{key: key, at: t}
		heap.Push(&q.due, it)
		q.index[key] = it
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
		wait := time.Hour
		now := time.Now()
		q.promote(now.UnixNano())
		if len(q.ready) > 0 {
			next := heap.Pop(&q.ready).(*dueItem[K])
			delete(q.index, next.key)
			q.running[next.key] = true
			q.mu.Unlock()
			return next.key, true
		}
		if len(q.due) > 0 {
			wait = q.due[0].at.Sub(now)
		}
		q.mu.Unlock()
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
		q.schedule(key, t)
	}
}
