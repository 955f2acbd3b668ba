package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// withEventLimits lowers the bounds for one test.
func withEventLimits(t *testing.T, l eventLimits) {
	t.Helper()
	testStore.events.mu.Lock()
	prev := testStore.events.limits
	testStore.events.limits = l
	testStore.events.mu.Unlock()
	t.Cleanup(func() {
		testStore.events.mu.Lock()
		testStore.events.limits = prev
		testStore.events.mu.Unlock()
	})
}

// forgetIndexCache makes the next repeat look up the stored index, as a repeat recorded
// by another server would.
func forgetIndexCache(s *Store) {
	s.events.mu.Lock()
	s.events.index = nil
	s.events.mu.Unlock()
}

// eventKeyCount counts the keys of the log and of the index.
func eventKeyCount(t *testing.T) (logKeys, indexKeys int64) {
	t.Helper()
	for _, p := range []struct {
		prefix string
		n      *int64
	}{{eventLogPrefix, &logKeys}, {eventIndexPrefix, &indexKeys}} {
		resp, err := testStore.Client().Get(context.Background(), p.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		*p.n = resp.Count
	}
	return logKeys, indexKeys
}

func TestEventsMergeRepeats(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := testStore
	w, err := s.WatchEvents(ctx, v4.EventFilter{Namespace: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := v4.Event{Type: v4.EventWarning, Reason: "InstanceFailed", Kind: v4.KindProcess, Namespace: "merge", Name: "web", Message: "exit 1"}
	for i := range n {
		if i == n/2 {
			forgetIndexCache(s) // half of the repeats find the record through etcd
		}
		e.Time = base.Add(time.Duration(i) * time.Millisecond)
		if err := s.RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if logKeys, indexKeys := eventKeyCount(t); logKeys != 1 || indexKeys != 1 {
		t.Fatalf("%d identical events: %d records, %d index keys; want 1 and 1", n, logKeys, indexKeys)
	}
	got, err := s.ListEvents(ctx, v4.EventFilter{Namespace: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	last := base.Add((n - 1) * time.Millisecond)
	if len(got) != 1 || got[0].Count != n || !got[0].FirstTime.Equal(base) || !got[0].LastTime.Equal(last) || !got[0].Time.Equal(last) {
		t.Fatalf("merged record: %+v, want count %d from %v to %v", got, n, base, last)
	}
	// The watch saw every merge, in order, and no delete of a record's previous place.
	for i := range n {
		select {
		case it := <-w:
			r := it.Event
			if r.Count != i+1 {
				t.Fatalf("watch event %d: count %d, want %d", i, r.Count, i+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch: no event %d", i)
		}
	}
}

func TestEventsMergeConcurrent(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	e := v4.Event{Reason: "Pulled", Kind: v4.KindProcess, Namespace: "race", Name: "web", Message: "pulled"}
	var wg sync.WaitGroup
	errs := make(chan error, 4*25)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				forgetIndexCache(testStore) // each writer guesses wrong now and then
				errs <- testStore.RecordEvent(ctx, e)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := testStore.ListEvents(ctx, v4.EventFilter{Namespace: "race"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Count != 100 {
		t.Fatalf("100 concurrent repeats: %+v, want one record with count 100", got)
	}
}

func TestEventsMergeIdentity(t *testing.T) {
	base := v4.Event{Type: v4.EventWarning, Reason: "Failed", Kind: v4.KindProcess, Namespace: "ident", Name: "web", Message: "boom"}
	tests := []struct {
		name   string
		change func(*v4.Event)
	}{
		{"type", func(e *v4.Event) { e.Type = v4.EventNormal }},
		{"reason", func(e *v4.Event) { e.Reason = "Lost" }},
		{"kind", func(e *v4.Event) { e.Kind = v4.KindApplication }},
		{"namespace", func(e *v4.Event) { e.Namespace = "ident2" }},
		{"name", func(e *v4.Event) { e.Name = "db" }},
		{"message", func(e *v4.Event) { e.Message = "bang" }},
		{"taskgroup", func(e *v4.Event) { e.TaskGroup = "0.web" }},
		{"node", func(e *v4.Event) { e.Node = "node-a" }},
		{"kind and name shift", func(e *v4.Event) { e.Kind, e.Name = "proces", "sweb" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resetStore(t)
			other := base
			tt.change(&other)
			for _, e := range []v4.Event{base, other, base} {
				if err := testStore.RecordEvent(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			if logKeys, _ := eventKeyCount(t); logKeys != 2 {
				t.Fatalf("events differing in %s: %d records, want 2", tt.name, logKeys)
			}
		})
	}
}

func TestEventsMessageTruncated(t *testing.T) {
	tests := []struct {
		name, msg, want string
	}{
		{"short", "exit 1", "exit 1"},
		{"at the limit", strings.Repeat("a", maxEventMessage), strings.Repeat("a", maxEventMessage)},
		{"long", strings.Repeat("a", 5000), strings.Repeat("a", maxEventMessage-3) + "..."},
		// "é" is two bytes: the cut does not split one.
		{"multibyte", "a" + strings.Repeat("é", 1000), "a" + strings.Repeat("é", (maxEventMessage-4)/2) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resetStore(t)
			ctx := context.Background()
			if err := testStore.RecordEvent(ctx, v4.Event{Reason: "Said", Namespace: "trunc", Message: tt.msg}); err != nil {
				t.Fatal(err)
			}
			got, err := testStore.ListEvents(ctx, v4.EventFilter{Namespace: "trunc"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Message != tt.want || len(got[0].Message) > maxEventMessage {
				t.Fatalf("message of %d bytes stored as %d bytes, want %d", len(tt.msg), len(got[0].Message), len(tt.want))
			}
		})
	}
}
