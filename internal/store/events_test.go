package store

import (
	"context"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestEvents(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := testStore
	w, err := s.WatchEvents(ctx, v4.EventFilter{Namespace: "ev-a", Kind: v4.KindProcess})
	if err != nil {
		t.Fatal(err)
	}
	recs := []v4.Event{
		{Reason: "Created", Kind: v4.KindProcess, Namespace: "ev-a", Name: "web", Message: "process ev-a/web created"},
		{Type: v4.EventWarning, Reason: "Failed", Kind: v4.KindProcess, Namespace: "ev-a", Name: "db", Message: "boom"},
		{Reason: "Created", Kind: v4.KindConfigMap, Namespace: "ev-a", Name: "web", Message: "cm"},
		{Reason: "Created", Kind: v4.KindProcess, Namespace: "ev-b", Name: "web", Message: "other ns"},
	}
	for _, r := range recs {
		if err := s.RecordEvent(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter v4.EventFilter
		want   []string // messages, oldest first
	}{
		{"namespace", v4.EventFilter{Namespace: "ev-a"}, []string{"process ev-a/web created", "boom", "cm"}},
		{"kind", v4.EventFilter{Namespace: "ev-a", Kind: v4.KindProcess}, []string{"process ev-a/web created", "boom"}},
		{"name", v4.EventFilter{Name: "web", Kind: v4.KindProcess}, []string{"process ev-a/web created", "other ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListEvents(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, r := range got {
				if r.Namespace != "ev-a" && r.Namespace != "ev-b" {
					continue // records of other tests
				}
				msgs = append(msgs, r.Message)
				if r.Time.IsZero() || r.Type == "" {
					t.Errorf("record not completed: %+v", r)
				}
			}
			if len(msgs) != len(tt.want) {
				t.Fatalf("got %q, want %q", msgs, tt.want)
			}
			for i := range msgs {
				if msgs[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", msgs, tt.want)
				}
			}
		})
	}
	for _, want := range []string{"process ev-a/web created", "boom"} {
		select {
		case it := <-w:
			r := it.Event
			if r.Message != want {
				t.Fatalf("watch: got %q, want %q", r.Message, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch: no record %q", want)
		}
	}
	for _, p := range []string{eventLogPrefix, eventIndexPrefix + "ev-a/"} {
		resp, err := s.Client().Get(ctx, p, clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
			t.Fatalf("records and their index must carry a lease: %s: %v", p, err)
		}
	}
}
