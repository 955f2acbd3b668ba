package store

import clientv3 "go.etcd.io/etcd/client/v3"

// keptQueue is the largest array a drained changeQueue keeps for the next changes: a
// watch whose consumer takes each change as it comes allocates nothing per change, while
// the array of a burst goes.
const keptQueue = 4

// changeQueue holds converted changes in order, with their revisions and stored sizes,
// counted in budget too when there is one. A change taken leaves from the front without
// moving the others; the room it leaves is reused once half of the array is free, or
// once the queue is empty.
type changeQueue[T any] struct {
	items  []queuedChange[T]
	head   int // items[head:] wait
	bytes  int
	budget *WatchBudget
}

func (q *changeQueue[T]) len() int { return len(q.items) - q.head }

// first is the oldest change; the queue is not empty.
func (q *changeQueue[T]) first() *queuedChange[T] { return &q.items[q.head] }

// add queues a change of no stored size (a progress notification's).
func (q *changeQueue[T]) add(c queuedChange[T]) {
	if len(q.items) == cap(q.items) && q.head > 0 && q.head >= len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, c)
}

func (q *changeQueue[T]) push(v T, ev *clientv3.Event) {
	size := len(ev.Kv.Key) + len(ev.Kv.Value)
	if ev.PrevKv != nil {
		size += len(ev.PrevKv.Value)
	}
	q.add(queuedChange[T]{value: v, rev: ev.Kv.ModRevision, size: size})
	q.bytes += size
	q.budget.add(size)
}

// markRevisionEnds calls mark on the last change of each revision among those queued from
// the first-th waiting one on, one watch response's. etcd never splits a revision's
// changes (one transaction's) over two responses of a watch without fragments, so the
// last of a revision in a response is the last of that revision.
func (q *changeQueue[T]) markRevisionEnds(first int, mark func(*T)) {
	for i := q.head + first; i < len(q.items); i++ {
		if i+1 == len(q.items) || q.items[i+1].rev != q.items[i].rev {
			mark(&q.items[i].value)
		}
	}
}

// clear drops every change, giving their bytes back to the budget.
func (q *changeQueue[T]) clear() {
	q.budget.add(-q.bytes)
	q.items, q.head, q.bytes = nil, 0, 0
}

// pop drops the first change and returns its revision.
func (q *changeQueue[T]) pop() int64 {
	first := q.items[q.head]
	q.items[q.head] = queuedChange[T]{} // let the value be collected
	q.head++
	q.bytes -= first.size
	q.budget.add(-first.size)
	if q.head == len(q.items) { // drained: start over, in a small array
		if cap(q.items) > keptQueue {
			q.items = nil
		} else {
			q.items = q.items[:0]
		}
		q.head = 0
	}
	return first.rev
}
