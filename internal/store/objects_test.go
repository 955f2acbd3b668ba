package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestCreateGetList(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	for _, o := range []*v4.ConfigMap{
		configMap("crud-b", "two", "2"),
		configMap("crud-a", "zed", "z"),
		configMap("crud-a", "alpha", "a"),
		configMap("crud-a-x", "mid", "m"), // "crud-a-x" sorts after "crud-a" but its key before
	} {
		if err := s.Create(ctx, o, Raw{}); err != nil {
			t.Fatal(err)
		}
		if o.Metadata.ResourceVersion == "" || o.Metadata.CreationTimestamp.IsZero() {
			t.Fatalf("create did not set metadata: %+v", o.Metadata)
		}
	}
	err := s.Create(ctx, configMap("crud-a", "alpha", "again"), Raw{})
	if !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}

	got, err := s.Get(ctx, v4.KindConfigMap, "crud-a", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if content(t, got) != "a" || got.GetMeta().ResourceVersion == "" {
		t.Fatalf("get: %+v", got)
	}
	if _, err := s.Get(ctx, v4.KindConfigMap, "crud-a", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: got %v, want ErrNotFound", err)
	}

	tests := []struct {
		ns   string
		want []string
	}{
		{"crud-a", []string{"crud-a/alpha", "crud-a/zed"}},
		{"crud-b", []string{"crud-b/two"}},
		{"crud-none", nil},
	}
	for _, tt := range tests {
		objs, rev, err := s.List(ctx, v4.KindConfigMap, tt.ns)
		if err != nil {
			t.Fatal(err)
		}
		if rev == 0 {
			t.Errorf("list %s: revision 0", tt.ns)
		}
		assertNames(t, objs, tt.want)
	}

	all, _, err := s.List(ctx, v4.KindConfigMap, "")
	if err != nil {
		t.Fatal(err)
	}
	var mine []v4.Object
	for _, o := range all {
		switch o.GetMeta().Namespace {
		case "crud-a", "crud-a-x", "crud-b":
			mine = append(mine, o)
		}
	}
	assertNames(t, mine, []string{"crud-a/alpha", "crud-a/zed", "crud-a-x/mid", "crud-b/two"})
}

func assertNames(t *testing.T, objs []v4.Object, want []string) {
	t.Helper()
	var got []string
	for _, o := range objs {
		got = append(got, o.GetMeta().Namespace+"/"+o.GetMeta().Name)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestUpdate(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	o := configMap("upd", "cfg", "v1")
	if err := s.Create(ctx, o, Raw{}); err != nil {
		t.Fatal(err)
	}
	created, rv1 := o.Metadata.CreationTimestamp, o.Metadata.ResourceVersion

	// With a matching resourceVersion; creationTimestamp given by the client is ignored.
	o2 := configMap("upd", "cfg", "v2")
	o2.Metadata.ResourceVersion = rv1
	o2.Metadata.CreationTimestamp = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Update(ctx, o2, Raw{ContentType: ContentTypeYAML, Data: []byte("kind: configmap\n")}); err != nil {
		t.Fatal(err)
	}
	if o2.Metadata.ResourceVersion == rv1 || !o2.Metadata.CreationTimestamp.Equal(created) {
		t.Fatalf("update metadata: %+v (created %v, rv1 %s)", o2.Metadata, created, rv1)
	}
	got, err := s.Get(ctx, v4.KindConfigMap, "upd", "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if content(t, got) != "v2" || got.GetMeta().ResourceVersion != o2.Metadata.ResourceVersion ||
		!got.GetMeta().CreationTimestamp.Equal(created) {
		t.Fatalf("after update: %+v", got)
	}
	raw, err := s.GetRaw(ctx, v4.KindConfigMap, "upd", "cfg")
	if err != nil || raw.ContentType != ContentTypeYAML || string(raw.Data) != "kind: configmap\n" {
		t.Fatalf("raw after update: %+v, %v", raw, err)
	}

	// Stale resourceVersion.
	stale := configMap("upd", "cfg", "v3")
	stale.Metadata.ResourceVersion = rv1
	if err := s.Update(ctx, stale, Raw{}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", err)
	}
	// No resourceVersion: last writer wins; empty raw keeps the stored definition.
	if err := s.Update(ctx, configMap("upd", "cfg", "v4"), Raw{}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := s.GetRaw(ctx, v4.KindConfigMap, "upd", "cfg"); string(raw.Data) != "kind: configmap\n" {
		t.Fatalf("empty raw replaced the definition: %q", raw.Data)
	}
	if err := s.Update(ctx, configMap("upd", "missing", "x"), Raw{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: got %v, want ErrNotFound", err)
	}
	bad := configMap("upd", "cfg", "x")
	bad.Metadata.ResourceVersion = "abc"
	if err := s.Update(ctx, bad, Raw{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("update with bad resourceVersion: got %v, want ErrInvalid", err)
	}
}

func TestDelete(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	tests := []struct {
		name    string
		rv      func(created string) string
		wantErr error
	}{
		{"no precondition", func(string) string { return "" }, nil},
		{"matching precondition", func(rv string) string { return rv }, nil},
		{"stale precondition", func(string) string { return "1" }, ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := configMap("del", "cfg", tt.name)
			if err := s.Create(ctx, o, Raw{Data: []byte(`{"x":1}`)}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(ctx, v4.KindConfigMap, "del", "cfg", "") })
			got, err := s.Delete(ctx, v4.KindConfigMap, "del", "cfg", tt.rv(o.Metadata.ResourceVersion))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if content(t, got) != tt.name || got.GetMeta().ResourceVersion != o.Metadata.ResourceVersion {
				t.Fatalf("deleted object: %+v", got)
			}
			if _, err := s.Get(ctx, v4.KindConfigMap, "del", "cfg"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get after delete: %v", err)
			}
			if _, err := s.GetRaw(ctx, v4.KindConfigMap, "del", "cfg"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("raw after delete: %v", err)
			}
		})
	}
	if _, err := s.Delete(ctx, v4.KindConfigMap, "del", "missing", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
}

func TestGetRawDefault(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	o := configMap("raw", "cfg", "c")
	if err := testStore.Create(ctx, o, Raw{}); err != nil {
		t.Fatal(err)
	}
	raw, err := testStore.GetRaw(ctx, v4.KindConfigMap, "raw", "cfg")
	if err != nil || raw.ContentType != ContentTypeJSON || len(raw.Data) == 0 {
		t.Fatalf("raw: %+v %v", raw, err)
	}
	yml := []byte("apiVersion: v4\nkind: configmap\n")
	o2 := configMap("raw", "cfg2", "c")
	if err := testStore.Create(ctx, o2, Raw{ContentType: ContentTypeYAML, Data: yml}); err != nil {
		t.Fatal(err)
	}
	raw, err = testStore.GetRaw(ctx, v4.KindConfigMap, "raw", "cfg2")
	if err != nil || raw.ContentType != ContentTypeYAML || string(raw.Data) != string(yml) {
		t.Fatalf("raw: %+v %v", raw, err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-reopen-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Open(ctx, Config{DataDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	o := configMap("reopen", "cfg", "kept")
	if err := s.Create(ctx, o, Raw{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Config{DataDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ctx, v4.KindConfigMap, "reopen", "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if content(t, got) != "kept" || got.GetMeta().ResourceVersion != o.Metadata.ResourceVersion {
		t.Fatalf("after reopen: %+v", got)
	}
}

func TestBadKeys(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	tests := []struct {
		name string
		call func() error
	}{
		{"create without name", func() error { return s.Create(ctx, configMap("bad", "", "x"), Raw{}) }},
		{"create without namespace", func() error { return s.Create(ctx, configMap("", "n", "x"), Raw{}) }},
		{"create with slash", func() error { return s.Create(ctx, configMap("bad", "a/b", "x"), Raw{}) }},
		{"get with slash", func() error { _, err := s.Get(ctx, v4.KindConfigMap, "bad/x", "n"); return err }},
		{"delete with slash", func() error { _, err := s.Delete(ctx, v4.KindConfigMap, "bad", "x/y", ""); return err }},
		{"list unknown kind", func() error { _, _, err := s.List(ctx, "widget", ""); return err }},
		{"watch with slash", func() error { _, err := s.Watch(ctx, v4.KindConfigMap, "a/b", 0); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestExternalEndpoints(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	if err := testStore.Create(ctx, configMap("external", "cfg", "shared"), Raw{}); err != nil {
		t.Fatal(err)
	}
	ext, err := Open(ctx, Config{Endpoints: testStore.Endpoints(), EtcdTLS: testStore.ClientTLS(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ext.Get(ctx, v4.KindConfigMap, "external", "cfg")
	if err != nil || content(t, got) != "shared" {
		t.Fatalf("through external client: %+v %v", got, err)
	}
	if err := ext.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ext.Ready(ctx); err == nil {
		t.Fatal("Ready on a closed store succeeded")
	}
	// Closing an external client leaves the cluster running.
	if err := testStore.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// CreateAll writes many objects in one revision; when one exists the others are still
// written one by one, and the error names the one that was not.
func TestCreateAll(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	mk := func(name string) v4.Object {
		return &v4.ConfigMap{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindConfigMap},
			Metadata: v4.ObjectMeta{Namespace: "ns", Name: name}}
	}
	var objs []v4.Object
	for i := range createBatch + 3 {
		objs = append(objs, mk(fmt.Sprintf("c%d", i)))
	}
	created, err := testStore.CreateAll(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range created {
		if !ok || objs[i].GetMeta().ResourceVersion == "" {
			t.Fatalf("object %d: created %v, version %q", i, ok, objs[i].GetMeta().ResourceVersion)
		}
	}
	if a, b := objs[0].GetMeta().ResourceVersion, objs[createBatch-1].GetMeta().ResourceVersion; a != b {
		t.Fatalf("one batch, two revisions: %s, %s", a, b)
	}
	again := []v4.Object{mk("new-1"), mk("c0"), mk("new-2")}
	created, err = testStore.CreateAll(ctx, again)
	if !errors.Is(err, ErrAlreadyExists) || !strings.Contains(err.Error(), "c0") || !created[0] || created[1] || !created[2] {
		t.Fatalf("created %v, err %v", created, err)
	}
	list, _, err := testStore.List(ctx, v4.KindConfigMap, "ns")
	if err != nil || len(list) != createBatch+5 {
		t.Fatalf("%d objects stored, %v", len(list), err)
	}
}

// UpdateAll writes objects read at their versions in one revision, and nothing when one
// of them changed or is gone since it was read.
func TestUpdateAll(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	var objs []v4.Object
	for _, name := range []string{"a", "b", "c"} {
		cm := configMap("upd", name, "1")
		if err := testStore.Create(ctx, cm, Raw{}); err != nil {
			t.Fatal(err)
		}
		cm.Datas["k"] = v4.ConfigMapData{Type: "file", Content: "2"}
		objs = append(objs, cm)
	}
	updated, err := testStore.UpdateAll(ctx, objs)
	if err != nil || !updated[0] || !updated[1] || !updated[2] {
		t.Fatalf("updated %v, %v", updated, err)
	}
	if a, c := objs[0].GetMeta().ResourceVersion, objs[2].GetMeta().ResourceVersion; a != c {
		t.Fatalf("one transaction, two revisions: %s, %s", a, c)
	}
	for _, o := range objs {
		got, err := testStore.Get(ctx, v4.KindConfigMap, "upd", o.GetMeta().Name)
		if err != nil || content(t, got) != "2" || got.GetMeta().ResourceVersion != o.GetMeta().ResourceVersion {
			t.Fatalf("%s: %v %v", o.GetMeta().Name, got, err)
		}
	}
	// b changes behind the batch's back: nothing of the batch is written.
	if err := testStore.Update(ctx, configMap("upd", "b", "other"), Raw{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		o.(*v4.ConfigMap).Datas["k"] = v4.ConfigMapData{Type: "file", Content: "3"}
	}
	updated, err = testStore.UpdateAll(ctx, objs)
	if err != nil || updated[0] || updated[1] || updated[2] {
		t.Fatalf("a stale batch: updated %v, %v", updated, err)
	}
	if got, _ := testStore.Get(ctx, v4.KindConfigMap, "upd", "a"); content(t, got) != "2" {
		t.Fatalf("a stale batch wrote a: %q", content(t, got))
	}
	if _, err := testStore.UpdateAll(ctx, []v4.Object{configMap("upd", "a", "x")}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an object without its version: %v", err)
	}
}
