package store

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A watch's queue hands out its changes in order and counts their bytes whatever the mix
// of pushes and pops, reuses the room of those taken (a consumer one change behind for
// good holds a small array), and marks the last change of each revision of a response
// even when that response's changes moved the queue's content to the array's front.
func TestChangeQueueReusesItsRoom(t *testing.T) {
	type change struct {
		rev int64
		end bool
	}
	var q changeQueue[change]
	push := func(rev int64) {
		q.push(change{rev: rev}, &clientv3.Event{Kv: &mvccpb.KeyValue{Key: []byte("k"), Value: []byte("v"), ModRevision: rev}})
	}
	want := int64(1)
	pop := func() {
		t.Helper()
		if c := *q.first(); c.value.rev != want {
			t.Fatalf("first is revision %d, want %d", c.value.rev, want)
		}
		if rev := q.pop(); rev != want {
			t.Fatalf("popped revision %d, want %d", rev, want)
		}
		want++
	}
	for rev := int64(1); rev <= 1000; rev++ {
		push(rev)
		if q.len() > 1 {
			pop()
		}
	}
	if cap(q.items) > 4 || q.bytes != 2 {
		t.Fatalf("one change behind: an array of %d, %d bytes counted, want at most 4 and 2", cap(q.items), q.bytes)
	}
	// Two more taken, then a response of revisions 1003, 1003, 1004 whose changes move
	// the one waiting to the array's front.
	push(1001)
	push(1002)
	pop()
	pop()
	first, head := q.len(), q.head
	push(1003)
	push(1003)
	push(1004)
	if q.head >= head {
		t.Fatalf("the queue's content stayed at %d (was at %d): nothing moved", q.head, head)
	}
	q.markRevisionEnds(first, func(c *change) { c.end = true })
	var got []change
	for i := q.head; i < len(q.items); i++ {
		got = append(got, q.items[i].value)
	}
	wantEnds := []change{{1002, false}, {1003, false}, {1003, true}, {1004, true}}
	if len(got) != len(wantEnds) {
		t.Fatalf("queued %v, want %v", got, wantEnds)
	}
	for i := range got {
		if got[i] != wantEnds[i] {
			t.Fatalf("queued %v, want %v", got, wantEnds)
		}
	}
	q.clear()
	if q.len() != 0 || q.bytes != 0 {
		t.Fatalf("cleared: %d changes, %d bytes", q.len(), q.bytes)
	}
}
