package store

import (
	"context"
	"errors"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

type seen struct {
	typ     EventType
	name    string
	content string
}

func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return Event{}
}

func expect(t *testing.T, ch <-chan Event, want ...seen) {
	t.Helper()
	for i, w := range want {
		ev := next(t, ch)
		got := seen{ev.Type, ev.Object.GetMeta().Name, content(t, ev.Object)}
		if got != w {
			t.Fatalf("event %d: got %+v, want %+v", i, got, w)
		}
		if ev.Revision == 0 || ev.Object.GetMeta().ResourceVersion != formatRev(ev.Revision) {
			t.Fatalf("event %d: revision %d, object rv %s", i, ev.Revision, ev.Object.GetMeta().ResourceVersion)
		}
	}
}

func TestWatch(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := testStore
	if err := s.Create(ctx, configMap("watch", "pre", "0"), Raw{}); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, v4.KindConfigMap, "watch", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Changes elsewhere must not show up.
	if err := s.Create(ctx, configMap("watch-other", "x", "0"), Raw{}); err != nil {
		t.Fatal(err)
	}
	o := configMap("watch", "cfg", "1")
	if err := s.Create(ctx, o, Raw{}); err != nil {
		t.Fatal(err)
	}
	startRev, _ := parseRev(o.Metadata.ResourceVersion)
	if err := s.Update(ctx, configMap("watch", "cfg", "2"), Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, v4.KindConfigMap, "watch", "cfg", ""); err != nil {
		t.Fatal(err)
	}
	expect(t, ch,
		seen{Added, "pre", "0"},
		seen{Added, "cfg", "1"},
		seen{Modified, "cfg", "2"},
		seen{Deleted, "cfg", "2"},
	)

	// From a revision: only what happened after it.
	from, err := s.Watch(ctx, v4.KindConfigMap, "watch", startRev)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, from, seen{Modified, "cfg", "2"}, seen{Deleted, "cfg", "2"})

	// All namespaces.
	all, err := s.Watch(ctx, v4.KindConfigMap, "", startRev)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, all, seen{Modified, "cfg", "2"}, seen{Deleted, "cfg", "2"})

	// The channel closes when the context ends.
	cancel()
	for range ch {
	}
}

func TestWatchCompacted(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	o := configMap("watch-compact", "cfg", "1")
	if err := s.Create(ctx, o, Raw{}); err != nil {
		t.Fatal(err)
	}
	old, _ := parseRev(o.Metadata.ResourceVersion)
	for _, c := range []string{"2", "3"} {
		if err := s.Update(ctx, configMap("watch-compact", "cfg", c), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.Client().Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Watch(ctx, v4.KindConfigMap, "watch-compact", old); !errors.Is(err, ErrCompacted) {
		t.Fatalf("watch from compacted revision: got %v, want ErrCompacted", err)
	}
}

func TestTyped(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	procs := Typed[*v4.Process](testStore, v4.KindProcess)
	obj, err := v4.New(v4.KindProcess)
	if err != nil {
		t.Fatal(err)
	}
	p := obj.(*v4.Process)
	p.GetMeta().Name, p.GetMeta().Namespace = "web", "typed"
	w, err := procs.Watch(ctx, "typed", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := procs.Create(ctx, p, Raw{}); err != nil {
		t.Fatal(err)
	}
	got, err := procs.Get(ctx, "typed", "web")
	if err != nil || got.GetMeta().Name != "web" {
		t.Fatalf("get: %+v %v", got, err)
	}
	got.GetMeta().Labels = map[string]string{"tier": "front"}
	if err := procs.Update(ctx, got, Raw{}); err != nil {
		t.Fatal(err)
	}
	list, rev, err := procs.List(ctx, "typed")
	if err != nil || len(list) != 1 || list[0].GetMeta().Labels["tier"] != "front" || rev == 0 {
		t.Fatalf("list: %+v %d %v", list, rev, err)
	}
	del, err := procs.Delete(ctx, "typed", "web", got.GetMeta().ResourceVersion)
	if err != nil || del.GetMeta().Name != "web" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, err := procs.Get(ctx, "typed", "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	for _, want := range []EventType{Added, Modified, Deleted} {
		select {
		case ev := <-w:
			if ev.Type != want || ev.Object.GetMeta().Name != "web" {
				t.Fatalf("typed watch: got %s %s, want %s", ev.Type, ev.Object.GetMeta().Name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("typed watch: no %s event", want)
		}
	}
	if err := Typed[*v4.Process](testStore, v4.KindConfigMap).Create(ctx, p, Raw{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("kind mismatch: got %v, want ErrInvalid", err)
	}
}

// The changes of one transaction share a revision, and only the last of them is marked as
// its end, so a reader can apply a transaction whole.
func TestWatchMarksRevisionEnds(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := testStore
	ch, err := s.Watch(ctx, v4.KindConfigMap, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, configMap("ends", "alone", "0"), Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAll(ctx, []v4.Object{configMap("ends", "a", "1"), configMap("ends", "b", "1"), configMap("ends", "c", "1")}); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		end  bool
	}{{"alone", true}, {"a", false}, {"b", false}, {"c", true}}
	var txnRev int64
	for i, w := range want {
		ev := next(t, ch)
		if ev.Object.GetMeta().Name != w.name || ev.RevisionEnd != w.end {
			t.Fatalf("event %d: %s (end %v), want %s (end %v)", i, ev.Object.GetMeta().Name, ev.RevisionEnd, w.name, w.end)
		}
		if i == 1 {
			txnRev = ev.Revision
		} else if i > 1 && ev.Revision != txnRev {
			t.Fatalf("event %d at revision %d, the transaction's is %d", i, ev.Revision, txnRev)
		}
	}
}
