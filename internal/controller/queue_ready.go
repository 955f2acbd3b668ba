package controller

import "container/heap"

// Keys that are due wait in a second heap, ordered by priority (highest first) and then
// by due time, when the queue has a priority function: among the workloads waiting to be
// reconciled, the more important are placed first (docs/policy.md, "Priorities and
// preemption"). Without one, every key has priority 0 and the order is the due time's.

// readyHeap orders due keys by priority, then due time (container/heap).
type readyHeap[K comparable] []*dueItem[K]

func (h readyHeap[K]) Len() int { return len(h) }
func (h readyHeap[K]) Less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio > h[j].prio
	}
	return h[i].at.Before(h[j].at)
}
func (h readyHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *readyHeap[K]) Push(x any) {
	it := x.(*dueItem[K])
	it.pos = len(*h)
	*h = append(*h, it)
}
func (h *readyHeap[K]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// promote moves every key due by now from the due heap to the ready heap, with its
// priority; q.mu is held.
func (q *queue[K]) promote(nowUnix int64) {
	for len(q.due) > 0 && q.due[0].at.UnixNano() <= nowUnix {
		it := heap.Pop(&q.due).(*dueItem[K])
		it.ready = true
		if q.prio != nil {
			it.prio = q.prio(it.key)
		}
		heap.Push(&q.ready, it)
	}
}
