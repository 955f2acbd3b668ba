package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestEventsPerObjectBound(t *testing.T) {
	resetStore(t)
	withEventLimits(t, eventLimits{perObject: 5, perNamespace: 1000, total: 1000, totalSlack: 1})
	ctx := context.Background()
	rec := func(ns, name, msg string) {
		t.Helper()
		if err := testStore.RecordEvent(ctx, v4.Event{Reason: "Tick", Kind: v4.KindProcess, Namespace: ns, Name: name, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	// A hostile writer: a distinct message every time.
	for i := range 8 {
		rec("bound", "web", fmt.Sprint("tick ", i))
		if i == 5 {
			rec("bound", "web", "tick 1") // seen again: now among the most recent
		}
	}
	rec("bound", "db", "other object") // another object's records are its own
	got, err := testStore.ListEvents(ctx, v4.EventFilter{Namespace: "bound", Kind: v4.KindProcess, Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Message)
	}
	want := []string{"tick 4", "tick 5", "tick 1", "tick 6", "tick 7"}
	if !slices.Equal(msgs, want) {
		t.Fatalf("object keeps %q, want the 5 most recently seen %q", msgs, want)
	}
	if logKeys, indexKeys := eventKeyCount(t); logKeys != 6 || indexKeys != 6 {
		t.Fatalf("%d records, %d index keys; want 6 and 6", logKeys, indexKeys)
	}
}

func TestEventsNamespaceAndTotalBounds(t *testing.T) {
	tests := []struct {
		name     string
		limits   eventLimits
		spread   []string
		n        int
		maxKeys  int64
		keepNewN int // the most recent records that must be kept
	}{
		// 100 per namespace, trimming 1% more: 99 once over.
		{"namespace", eventLimits{perObject: 1000, perNamespace: 100, total: 10_000, totalSlack: 1}, []string{"nsb"}, 250, 100, 90},
		{"total", eventLimits{perObject: 1000, perNamespace: 10_000, total: 100, totalSlack: 1}, []string{"tb-a", "tb-b", "tb-c"}, 250, 100, 90},
		// Trimmed 10 past the bound: up to 9 more.
		{"total checked now and then", eventLimits{perObject: 1000, perNamespace: 10_000, total: 100, totalSlack: 10}, []string{"tb-a", "tb-b"}, 250, 109, 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resetStore(t)
			withEventLimits(t, tt.limits)
			recordSpread(t, tt.n, tt.spread...)
			logKeys, indexKeys := eventKeyCount(t)
			if logKeys > tt.maxKeys || indexKeys != logKeys {
				t.Fatalf("%d events: %d records, %d index keys; want at most %d, as many index keys", tt.n, logKeys, indexKeys, tt.maxKeys)
			}
			got, err := testStore.ListEvents(context.Background(), v4.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < tt.keepNewN {
				t.Fatalf("kept %d records, want at least %d", len(got), tt.keepNewN)
			}
			for i, e := range got[len(got)-tt.keepNewN:] {
				if want := fmt.Sprint(tt.n - tt.keepNewN + i); e.Message != want {
					t.Fatalf("kept record %q where the recent %q belongs", e.Message, want)
				}
			}
		})
	}
}
