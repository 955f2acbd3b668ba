package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// writeConfigMaps creates n configmaps bound/cm-<i> with content of size bytes and
// returns the revision of each write.
func writeConfigMaps(t *testing.T, n, size int) []int64 {
	t.Helper()
	ctx := context.Background()
	revs := make([]int64, n)
	for i := range n {
		cm := configMap("bound", fmt.Sprintf("cm-%d", i), strings.Repeat("x", size))
		if err := testStore.Create(ctx, cm, Raw{}); err != nil {
			t.Fatal(err)
		}
		rev, err := parseRev(cm.Metadata.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		revs[i] = rev
	}
	return revs
}

// drain reads ch to its end (or 10 s) and returns its events.
func drain(t *testing.T, ch <-chan Event) []Event {
	t.Helper()
	var got []Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("the watch did not end within 10 s (%d events)", len(got))
		}
	}
}

// TestBoundedWatchEndsForAConsumerThatFellBehind: a consumer that stops reading while
// more than the limit of changes arrives gets what it was given, then one Error event
// naming the last revision it got, and a watch again from there loses nothing.
func TestBoundedWatchEndsForAConsumerThatFellBehind(t *testing.T) {
	const writes = 120
	tests := []struct {
		name  string
		limit WatchLimit
		size  int
	}{
		{"by count", WatchLimit{Events: 5}, 10},
		{"by bytes", WatchLimit{Bytes: 20 << 10}, 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resetStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", 0, Bounded(tt.limit))
			if err != nil {
				t.Fatal(err)
			}
			revs := writeConfigMaps(t, writes, tt.size) // nobody reads meanwhile
			got := drain(t, ch)
			if len(got) < 2 || len(got) > watchBuffer+1 {
				t.Fatalf("got %d events, want the buffered ones (at most %d) and an error", len(got), watchBuffer)
			}
			last := got[len(got)-1]
			var behind *FellBehindError
			if last.Type != Error || !errors.As(last.Err, &behind) || !errors.Is(last.Err, ErrFellBehind) {
				t.Fatalf("last event %s (%v), want ERROR with a FellBehindError", last.Type, last.Err)
			}
			given := got[:len(got)-1]
			for i, ev := range given {
				if ev.Type != Added || ev.Revision != revs[i] {
					t.Fatalf("event %d: %s at %d, want ADDED at %d", i, ev.Type, ev.Revision, revs[i])
				}
			}
			if last.Revision != revs[len(given)-1] || behind.Revision != last.Revision {
				t.Fatalf("error names revision %d (%d), want the last given %d", last.Revision, behind.Revision, revs[len(given)-1])
			}
			if !strings.Contains(behind.Error(), fmt.Sprintf("resourceVersion=%d", last.Revision)) {
				t.Fatalf("message %q does not say where to resume", behind.Error())
			}

			// Resuming from the named revision gives exactly the rest.
			rest, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", last.Revision)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(given); i < writes; i++ {
				if ev := next(t, rest); ev.Revision != revs[i] {
					t.Fatalf("resumed event for write %d at %d, want %d", i, ev.Revision, revs[i])
				}
			}
		})
	}
}

// A consumer cut off in the middle of a transaction's changes is told to resume before
// that transaction: a watch from the named revision gives every object it wrote.
func TestBoundedWatchResumesAWholeRevision(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", 0, Bounded(WatchLimit{Events: 5}))
	if err != nil {
		t.Fatal(err)
	}
	// An unbounded watch beside it tells when etcd has sent the transaction: a reader
	// that started before the changes came would keep up with them.
	witness, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	objs := make([]v4.Object, n)
	for i := range objs {
		objs[i] = configMap("bound", fmt.Sprintf("cm-%d", i), "x")
	}
	if _, err := testStore.CreateAll(ctx, objs); err != nil { // one revision
		t.Fatal(err)
	}
	for range n {
		next(t, witness)
	}
	time.Sleep(200 * time.Millisecond) // the bounded watch's own copy of etcd's response
	got := drain(t, ch)                // nobody read meanwhile
	last := got[len(got)-1]
	if last.Type != Error || len(got) < 2 || len(got)-1 >= n {
		t.Fatalf("got %d events ending with %s, want part of the transaction and an error", len(got), last.Type)
	}
	txnRev := got[0].Revision
	if last.Revision != txnRev-1 {
		t.Fatalf("the error names revision %d, want %d: the transaction at %d was only partly sent", last.Revision, txnRev-1, txnRev)
	}
	rest, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", last.Revision)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range n {
		seen[next(t, rest).Object.GetMeta().Name] = true
	}
	if len(seen) != n {
		t.Fatalf("resumed watch gave %d of the transaction's %d objects", len(seen), n)
	}
}

// TestBoundedWatchKeepsAReadingConsumer: a consumer that reads as changes come never
// falls behind, however many there are, and the initial ADDED events of a large list do
// not count against the limit.
func TestBoundedWatchKeepsAReadingConsumer(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const existing, writes = 200, 100
	writeConfigMaps(t, existing, 10)
	ch, err := testStore.Watch(ctx, v4.KindConfigMap, "", 0, Bounded(WatchLimit{Events: 20}))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the list waits, unread, beyond the limit
	for i := range existing {
		if ev := next(t, ch); ev.Type != Added {
			t.Fatalf("initial event %d: %s (%v)", i, ev.Type, ev.Err)
		}
	}
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			cm := configMap("bound", fmt.Sprintf("cm-%d", i), "changed")
			cm.Metadata.ResourceVersion = ""
			if err := testStore.Update(ctx, cm, Raw{}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range writes {
		if ev := next(t, ch); ev.Type != Modified {
			t.Fatalf("change %d: %s (%v)", i, ev.Type, ev.Err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBoundedEventWatch: the event watch ends the same way for a consumer that stopped.
func TestBoundedEventWatch(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := testStore.WatchEvents(ctx, v4.EventFilter{Namespace: "bound"}, Bounded(WatchLimit{Events: 3}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range watchBuffer + 20 {
		e := v4.Event{Reason: "Said", Kind: v4.KindProcess, Namespace: "bound", Name: "p", Message: fmt.Sprintf("message %d", i)}
		if err := testStore.RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var items []WatchedEvent
	for it := range ch {
		items = append(items, it)
	}
	if len(items) < 2 {
		t.Fatalf("got %d items, want events and an error", len(items))
	}
	if last := items[len(items)-1]; !errors.Is(last.Err, ErrFellBehind) {
		t.Fatalf("last item: %+v, want ErrFellBehind", last)
	}
	for i, it := range items[:len(items)-1] {
		if want := fmt.Sprintf("message %d", i); it.Err != nil || it.Event.Message != want {
			t.Fatalf("item %d: %q (%v), want %q", i, it.Event.Message, it.Err, want)
		}
	}
}

// TestWatchBudgetBoundsManyWatches: watches sharing a budget end, when they hold more than
// it together, if they have a change waiting (the stopped consumer), while one whose
// consumer reads goes on; their queues' bytes go back to the budget when they end.
func TestWatchBudgetBoundsManyWatches(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	budget := NewWatchBudget(20 << 10)
	limit := WatchLimit{Events: 1000, Bytes: 1 << 20, Budget: budget} // alone, neither would end
	stopped, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", 0, Bounded(limit))
	if err != nil {
		t.Fatal(err)
	}
	reading, err := testStore.Watch(ctx, v4.KindConfigMap, "bound", 0, Bounded(limit))
	if err != nil {
		t.Fatal(err)
	}
	const writes = 80
	got := make(chan []Event, 1)
	go func() { // reads as changes come; the test goroutine checks what it got
		var evs []Event
		timeout := time.After(30 * time.Second)
		for len(evs) < writes {
			select {
			case ev, ok := <-reading:
				if !ok {
					got <- evs
					return
				}
				evs = append(evs, ev)
			case <-timeout:
				got <- evs
				return
			}
		}
		got <- evs
	}()
	writeConfigMaps(t, writes, 1<<10)
	evs := drain(t, stopped)
	if last := evs[len(evs)-1]; last.Type != Error || !errors.Is(last.Err, ErrFellBehind) {
		t.Fatalf("the stopped watch ended with %s (%v), want ERROR", last.Type, last.Err)
	}
	read := <-got
	if len(read) != writes {
		t.Fatalf("the reading watch got %d of %d changes", len(read), writes)
	}
	for i, ev := range read {
		if ev.Type != Added {
			t.Fatalf("the reading watch's change %d: %s (%v)", i, ev.Type, ev.Err)
		}
	}
	cancel()
	waitFor(t, func() bool { return budget.Used() == 0 }, "the budget is given back")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}
