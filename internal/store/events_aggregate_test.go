package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The aggregator lets through the first distinct events of an object's reason, and their
// repeats, and combines the rest of its window; warnings, other reasons and other objects
// are never combined.
func TestAggregatorCombinesSimilarNormalEvents(t *testing.T) {
	a := newAggregator()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ev := func(typ, name, reason string, i int, at time.Time) v4.Event {
		return v4.Event{Time: at, Type: typ, Reason: reason, Kind: v4.KindProcess, Namespace: "ns", Name: name,
			TaskGroup: fmt.Sprint(i, ".", name), Node: "node-1", Message: fmt.Sprintf("instance %d is Running", i)}
	}
	combined := func(e v4.Event) bool { return strings.HasPrefix(e.Message, "(combined from similar events)") }
	tests := []struct {
		name string
		in   v4.Event
		want bool // combined
	}{
		{"the first distinct ones pass", ev(v4.EventNormal, "web", "InstanceRunning", 9, start), false},
		{"a repeat of one passes", ev(v4.EventNormal, "web", "InstanceRunning", 3, start.Add(time.Second)), false},
		{"the eleventh distinct one is combined", ev(v4.EventNormal, "web", "InstanceRunning", 10, start.Add(time.Second)), true},
		{"an empty type is Normal", ev("", "web", "InstanceRunning", 11, start.Add(time.Second)), true},
		{"a warning is never combined", ev(v4.EventWarning, "web", "InstanceRunning", 12, start.Add(time.Second)), false},
		{"another reason has its own count", ev(v4.EventNormal, "web", "InstanceStarting", 12, start.Add(time.Second)), false},
		{"another object has its own count", ev(v4.EventNormal, "db", "InstanceRunning", 12, start.Add(time.Second)), false},
		{"after the window, a new one", ev(v4.EventNormal, "web", "InstanceRunning", 13, start.Add(aggregateWindow+time.Minute)), false},
	}
	for i := range aggregateAfter - 1 { // nine distinct ones before the table's first
		if e := a.combine(ev(v4.EventNormal, "web", "InstanceRunning", i, start)); combined(e) {
			t.Fatalf("event %d combined", i)
		}
	}
	for _, tc := range tests {
		got := a.combine(tc.in)
		if combined(got) != tc.want {
			t.Errorf("%s: combined %v, want %v (%q)", tc.name, combined(got), tc.want, got.Message)
		}
		if combined(got) && (got.TaskGroup != "" || got.Node != "" || got.Reason != tc.in.Reason || got.Name != tc.in.Name) {
			t.Errorf("%s: the combined record %+v", tc.name, got)
		}
	}

	// The keys followed are bounded.
	for i := range 3 * maxAggregateKeys {
		a.combine(ev(v4.EventNormal, fmt.Sprint("app", i), "InstanceRunning", 0, start))
	}
	if n := len(a.seen); n > maxAggregateKeys {
		t.Fatalf("%d keys followed, bound %d", n, maxAggregateKeys)
	}
}

// A burst of distinct Normal events of one object queued at once becomes its first few
// records and one combined record that counts the rest; the occurrences of one event in
// a batch are written as one record with their count.
func TestQueuedBurstIsCombined(t *testing.T) {
	resetStore(t)
	s := testStore
	s.similar = newAggregator()
	const burst = 500
	for i := range burst {
		s.QueueEvent(v4.Event{Reason: "InstanceRunning", Kind: v4.KindProcess, Namespace: "burst", Name: "web",
			TaskGroup: fmt.Sprint(i, ".web"), Message: fmt.Sprintf("instance %d is Running", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.FlushEvents(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListEvents(ctx, v4.EventFilter{Namespace: "burst"})
	if err != nil {
		t.Fatal(err)
	}
	var single, total int
	for _, r := range got {
		total += r.Occurrences()
		if strings.HasPrefix(r.Message, "(combined from similar events)") {
			if r.Count != burst-aggregateAfter || r.FirstTime.After(r.LastTime) {
				t.Errorf("the combined record: count %d (want %d), first %s, last %s", r.Count, burst-aggregateAfter, r.FirstTime, r.LastTime)
			}
			continue
		}
		single++
	}
	if single != aggregateAfter || len(got) != aggregateAfter+1 || total != burst {
		t.Fatalf("%d records (%d of one event), %d occurrences; want %d, %d, %d", len(got), single, total, aggregateAfter+1, aggregateAfter, burst)
	}
}
