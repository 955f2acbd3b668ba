package cache

import (
	"testing"

	"github.com/berthhq/berth/internal/store"
)

// A queue hands its changes out in order whatever the mix of pushes and pops, reuses the
// room of those sent, and keeps only a small array once drained.
func TestEventQueueOrder(t *testing.T) {
	var q eventQueue
	next, want := int64(1), int64(1)
	most := 0 // the most changes waiting at once
	for round := range 200 {
		for range round%7 + 1 {
			q.push(store.Event{Revision: next})
			next++
			most = max(most, q.len())
		}
		for range round%5 + 1 {
			if q.len() == 0 {
				break
			}
			if ev := q.pop(); ev.Revision != want {
				t.Fatalf("round %d: popped revision %d, want %d", round, ev.Revision, want)
			}
			want++
		}
		if cap(q.items) > 4*most {
			t.Fatalf("round %d: an array of %d for at most %d waiting changes", round, cap(q.items), most)
		}
	}
	for q.len() > 0 {
		if ev := q.pop(); ev.Revision != want {
			t.Fatalf("popped revision %d, want %d", ev.Revision, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped up to %d, pushed up to %d", want, next)
	}
	q.drained()
	if q.items != nil {
		t.Fatalf("a drained queue keeps an array of %d", cap(q.items))
	}
	q.push(store.Event{Revision: 1})
	q.pop()
	q.drained()
	if cap(q.items) == 0 || cap(q.items) > keptQueue {
		t.Fatalf("a drained queue of one change keeps an array of %d, want 1 to %d", cap(q.items), keptQueue)
	}

	// A watcher one change behind for good: the queue never drains, the room of the
	// changes sent is reused.
	q = eventQueue{}
	for i := range int64(1000) {
		q.push(store.Event{Revision: i + 2})
		if q.len() > 1 {
			q.pop()
		}
	}
	if cap(q.items) > 4 {
		t.Fatalf("one change behind for 1000 changes: an array of %d", cap(q.items))
	}
}
