package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func docs(objs ...v4.Object) []v4.Document {
	out := make([]v4.Document, len(objs))
	for i, o := range objs {
		out[i] = v4.Document{Object: o}
	}
	return out
}

func TestApply(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	steps := []struct {
		name string
		objs []v4.Object
		want []string
	}{
		{"create", []v4.Object{configMap("apply", "a", "1"), configMap("apply", "b", "1")},
			[]string{v4.ActionCreated, v4.ActionCreated}},
		{"unchanged", []v4.Object{configMap("apply", "a", "1"), configMap("apply", "b", "1")},
			[]string{v4.ActionUnchanged, v4.ActionUnchanged}},
		{"mixed", []v4.Object{configMap("apply", "c", "1"), configMap("apply", "a", "2"), configMap("apply", "b", "1")},
			[]string{v4.ActionCreated, v4.ActionUpdated, v4.ActionUnchanged}},
	}
	prev := map[string]string{}
	for _, st := range steps {
		res, err := s.Apply(ctx, docs(st.objs...))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(res) != len(st.want) {
			t.Fatalf("%s: %d results, want %d", st.name, len(res), len(st.want))
		}
		for i, r := range res {
			name := st.objs[i].GetMeta().Name
			if r.Action != st.want[i] || r.Name != name || r.Namespace != "apply" || r.Kind != v4.KindConfigMap {
				t.Errorf("%s: result %d = %+v, want %s %s", st.name, i, r, name, st.want[i])
			}
			if r.Action == v4.ActionUnchanged && r.ResourceVersion != prev[name] {
				t.Errorf("%s: unchanged %s has rv %s, want %s", st.name, name, r.ResourceVersion, prev[name])
			}
			if r.Action != v4.ActionUnchanged && r.ResourceVersion == prev[name] {
				t.Errorf("%s: written %s kept rv %s", st.name, name, r.ResourceVersion)
			}
			got, err := s.Get(ctx, v4.KindConfigMap, "apply", name)
			if err != nil {
				t.Fatal(err)
			}
			if got.GetMeta().ResourceVersion != r.ResourceVersion {
				t.Errorf("%s: stored rv %s, result says %s", st.name, got.GetMeta().ResourceVersion, r.ResourceVersion)
			}
			prev[name] = r.ResourceVersion
		}
	}
}

func TestApplyIsAtomic(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	existing := configMap("apply-atomic", "old", "1")
	if err := s.Create(ctx, existing, Raw{}); err != nil {
		t.Fatal(err)
	}
	stale := configMap("apply-atomic", "old", "2")
	stale.Metadata.ResourceVersion = "1" // long gone
	tests := []struct {
		name    string
		objs    []v4.Object
		wantErr error
	}{
		{"stale precondition", []v4.Object{configMap("apply-atomic", "new", "1"), stale}, ErrConflict},
		{"duplicate document", []v4.Object{configMap("apply-atomic", "new", "1"), configMap("apply-atomic", "new", "2")}, ErrInvalid},
		{"bad name", []v4.Object{configMap("apply-atomic", "new", "1"), configMap("apply-atomic", "a/b", "2")}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Apply(ctx, docs(tt.objs...)); !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if _, err := s.Get(ctx, v4.KindConfigMap, "apply-atomic", "new"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a document of a failed apply was written: %v", err)
			}
			got, err := s.Get(ctx, v4.KindConfigMap, "apply-atomic", "old")
			if err != nil || content(t, got) != "1" || got.GetMeta().ResourceVersion != existing.Metadata.ResourceVersion {
				t.Fatalf("existing object changed: %+v %v", got, err)
			}
		})
	}
}

func TestApplyRawContentType(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	yml := []byte("apiVersion: v4\nkind: configmap\nmetadata: {name: y, namespace: apply-raw}\n")
	d := []v4.Document{
		{Object: configMap("apply-raw", "y", "1"), Raw: yml},
		{Object: configMap("apply-raw", "j", "1"), Raw: []byte(` {"kind":"configmap"}`)},
	}
	if _, err := testStore.Apply(ctx, d); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Raw{"y": {ContentTypeYAML, yml}, "j": {ContentTypeJSON, d[1].Raw}} {
		raw, err := testStore.GetRaw(ctx, v4.KindConfigMap, "apply-raw", name)
		if err != nil || raw.ContentType != want.ContentType || string(raw.Data) != string(want.Data) {
			t.Errorf("%s: raw %+v %v, want %+v", name, raw, err, want)
		}
	}
}

// TestApplyConcurrentOneObject applies one object from 50 goroutines at once. Apply
// without resourceVersion is last-writer-wins (docs/store.md), so every apply must
// succeed however often it loses the race: exactly one creates, the others update (or
// find their content already stored), and the object ends with one of their contents.
func TestApplyConcurrentOneObject(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	const writers = 50
	type outcome struct {
		res []v4.ApplyResult
		err error
	}
	out := make([]outcome, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			res, err := testStore.Apply(ctx, docs(configMap("apply-race", "cm", strconv.Itoa(i))))
			out[i] = outcome{res, err}
		})
	}
	close(start)
	wg.Wait()
	actions := map[string]int{}
	contents := map[string]bool{}
	for i, o := range out {
		if o.err != nil {
			t.Errorf("apply %d: %v", i, o.err)
			continue
		}
		if len(o.res) != 1 {
			t.Fatalf("apply %d: %d results", i, len(o.res))
		}
		actions[o.res[0].Action]++
		contents[strconv.Itoa(i)] = true
	}
	if actions[v4.ActionCreated] != 1 || actions[v4.ActionCreated]+actions[v4.ActionUpdated]+actions[v4.ActionUnchanged] != writers {
		t.Errorf("actions %v, want one created and the rest updated or unchanged", actions)
	}
	got, err := testStore.Get(ctx, v4.KindConfigMap, "apply-race", "cm")
	if err != nil {
		t.Fatal(err)
	}
	if !contents[content(t, got)] {
		t.Errorf("stored content %q was not applied by anyone", content(t, got))
	}
}

func TestJitterStaysWithinItsCap(t *testing.T) {
	for _, limit := range []time.Duration{1, applyBackoffMin, applyBackoffMax} {
		for range 1000 {
			if d := jitter(limit); d < 1 || d > limit {
				t.Fatalf("jitter(%s) = %s, want within [1ns, %s]", limit, d, limit)
			}
		}
	}
}
