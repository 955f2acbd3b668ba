package cache

import "github.com/berthhq/berth/internal/store"

// keptQueue is the largest array a drained queue keeps for the next changes: a watcher
// sent a change at a time allocates nothing per change, and an idle one holds a few
// events' worth at most, while the array of a burst goes.
const keptQueue = 4

// eventQueue is the changes waiting for one watcher, oldest first. A change sent leaves
// from the front without moving the others; the room it leaves is reused once half of
// the array is free, or once the queue is empty.
type eventQueue struct {
	items []store.Event
	head  int // items[head:] wait
}

func (q *eventQueue) len() int { return len(q.items) - q.head }

func (q *eventQueue) push(ev store.Event) {
	if len(q.items) == cap(q.items) && q.head > 0 && q.head >= len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, ev)
}

// pop takes the oldest change; the queue is not empty.
func (q *eventQueue) pop() store.Event {
	ev := q.items[q.head]
	q.items[q.head] = store.Event{} // its object may go once the watcher is done with it
	q.head++
	return ev
}

// drained starts the empty queue over, keeping a small array.
func (q *eventQueue) drained() {
	if cap(q.items) > keptQueue {
		q.items = nil
	} else {
		q.items = q.items[:0]
	}
	q.head = 0
}
