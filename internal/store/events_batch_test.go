package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// RecordEvents writes new records together, merges a repeat into its record, skips a bad
// event naming it, and bounds an object's records as RecordEvent does.
func TestRecordEvents(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	before, err := s.Client().Get(ctx, "rev")
	if err != nil {
		t.Fatal(err)
	}
	var evs []v4.Event
	for i := range 300 {
		evs = append(evs, v4.Event{Reason: "InstanceRunning", Kind: v4.KindProcess, Namespace: "batch", Name: fmt.Sprint("web", i%3),
			TaskGroup: fmt.Sprintf("%d.web.batch.c.1", i), Message: fmt.Sprintf("instance %d is Running", i)})
	}
	evs = append(evs, evs[0]) // a repeat in the same call
	evs = append(evs, v4.Event{Reason: "Bad", Namespace: "bad/namespace", Name: "x"})
	err = s.RecordEvents(ctx, evs)
	if err == nil || !strings.Contains(err.Error(), "bad/namespace") {
		t.Fatalf("a bad event: %v", err)
	}
	after, err := s.Client().Get(ctx, "rev")
	if err != nil {
		t.Fatal(err)
	}
	// One transaction for the 300 new records (100 for each of three objects, their
	// bound), one for the repeat: a few revisions, not 300.
	if n := after.Header.Revision - before.Header.Revision; n > 10 {
		t.Fatalf("300 new records took %d revisions", n)
	}
	got, err := s.ListEvents(ctx, v4.EventFilter{Namespace: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 {
		t.Fatalf("%d records, want 300 (100 of each object)", len(got))
	}
	for _, r := range got {
		want := 1
		if r.TaskGroup == "0.web.batch.c.1" {
			want = 2
		}
		if r.Count != want {
			t.Fatalf("%s: count %d, want %d", r.TaskGroup, r.Count, want)
		}
	}

	// The object's bound holds for batched records too.
	withEventLimits(t, eventLimits{perObject: 5, perNamespace: 1000, total: 10_000, totalSlack: 1})
	var more []v4.Event
	for i := range 20 {
		more = append(more, v4.Event{Reason: "Many", Kind: v4.KindProcess, Namespace: "batch", Name: "db", Message: fmt.Sprint("m", i)})
	}
	if err := s.RecordEvents(ctx, more); err != nil {
		t.Fatal(err)
	}
	db, err := s.ListEvents(ctx, v4.EventFilter{Namespace: "batch", Kind: v4.KindProcess, Name: "db"})
	if err != nil || len(db) > 5 {
		t.Fatalf("db's records: %d (%v), bound 5", len(db), err)
	}
}

// Queued events are recorded a moment later, together.
func TestQueueEvent(t *testing.T) {
	resetStore(t)
	s := testStore
	for i := range 50 { // of 50 objects: none is combined with another
		s.QueueEvent(v4.Event{Reason: "Queued", Kind: v4.KindProcess, Namespace: "queued", Name: fmt.Sprint("web", i), Message: fmt.Sprint("q", i)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := s.ListEvents(context.Background(), v4.EventFilter{Namespace: "queued"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 50 queued events recorded", len(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := s.DroppedEvents(); n != 0 {
		t.Fatalf("%d events dropped", n)
	}
}
