package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// finishedWorkflow stores a finished workflow ns/name of status.uid uid and returns it
// as stored, with a node, ready to be archived.
func finishedWorkflow(t *testing.T, ns, name, uid string) *v4.ArchivedWorkflow {
	t.Helper()
	wf := &v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
		Spec:     v4.WorkflowSpec{Entrypoint: "main"},
		Status: v4.WorkflowStatus{UID: uid, Phase: v4.WfSucceeded, Progress: "1/1",
			Nodes: map[string]v4.WfNodeStatus{"n1": {ID: "n1", Name: name, Type: v4.WfNodePod, Phase: v4.WfSucceeded}}}}
	if err := testStore.Create(context.Background(), wf, Raw{ContentType: "application/json", Data: []byte(`{"kind":"workflow"}`)}); err != nil {
		t.Fatal(err)
	}
	return &v4.ArchivedWorkflow{ArchivedAt: time.Now().UTC(), Workflow: wf}
}

// archiveChunks returns the number of chunks of ns and the most entries one holds.
func archiveChunks(t *testing.T, ns string) (chunks, most int) {
	t.Helper()
	resp, err := testStore.Client().Get(context.Background(), wfArchivePrefix(ns), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		h, _, err := decodeChunkHeader(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if len(kv.Value) > wfArchiveChunkBytes {
			t.Errorf("chunk %s: %d bytes", kv.Key, len(kv.Value))
		}
		most = max(most, h.Entries)
	}
	return len(resp.Kvs), most
}

// Archived workflows leave the objects for chunks of at most 200, counted in bytes in
// their namespace's usage; they are listed in order, read by name (the last archived)
// or UID, and deleted.
func TestArchiveWorkflows(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	var entries []*v4.ArchivedWorkflow
	for i := range 450 {
		n := (i * 7) % 450
		entries = append(entries, finishedWorkflow(t, "arch", fmt.Sprintf("wf-%03d", n), fmt.Sprintf("u%d", n)))
	}
	before, err := testStore.NamespaceQuota(ctx, "arch")
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range [][]*v4.ArchivedWorkflow{entries[:200], entries[200:]} {
		errs, err := testStore.ArchiveWorkflows(ctx, "arch", part)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
	}
	if n, err := testStore.Count(ctx, v4.KindWorkflow); err != nil || n != 0 {
		t.Fatalf("%d workflows left as objects: %v", n, err)
	}
	chunks, most := archiveChunks(t, "arch")
	if chunks < 3 || most > wfArchiveChunkEntries {
		t.Fatalf("%d chunks, the largest of %d entries", chunks, most)
	}
	after, err := testStore.NamespaceQuota(ctx, "arch")
	if err != nil {
		t.Fatal(err)
	}
	counted, _, err := testStore.scanNamespace(ctx, "arch")
	if err != nil {
		t.Fatal(err)
	}
	if after.Usage.Objects != before.Usage.Objects-450 || after.Usage != counted {
		t.Fatalf("usage %+v before, %+v after, %+v counted", before.Usage, after.Usage, counted)
	}
	var seen []string
	for after := ""; ; {
		page, next, err := testStore.ListArchived(ctx, "arch", after, 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			seen = append(seen, e.SortKey())
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(seen) != 450 || seen[0] != "wf-000/u0" {
		t.Fatalf("listed %d, first %v", len(seen), seen[:min(1, len(seen))])
	}
	for i := 1; i < len(seen); i++ {
		if seen[i-1] >= seen[i] {
			t.Fatalf("out of order: %s, %s", seen[i-1], seen[i])
		}
	}
	// The same name archived again (a workflow made anew): the last archived is read.
	again := finishedWorkflow(t, "arch", "wf-100", "zz")
	again.ArchivedAt = time.Now().Add(time.Hour).UTC()
	if errs, err := testStore.ArchiveWorkflows(ctx, "arch", []*v4.ArchivedWorkflow{again}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	tests := []struct{ name, uid, want string }{
		{"wf-100", "", "zz"}, {"wf-100", "u100", "u100"}, {"wf-449", "", "u"}, {"wf-999", "", ""}, {"wf-100", "nope", ""},
	}
	for _, tt := range tests {
		got, err := testStore.GetArchived(ctx, "arch", tt.name, tt.uid)
		switch {
		case tt.want == "" && !errors.Is(err, ErrNotFound):
			t.Errorf("%s %s: %v, want not found", tt.name, tt.uid, err)
		case tt.want != "" && (err != nil || got.Workflow.Status.UID[:1] != tt.want[:1] || len(got.Workflow.Status.Nodes) != 1):
			t.Errorf("%s %s: %+v, %v; want uid %s", tt.name, tt.uid, got, err, tt.want)
		}
	}
	if ok, err := testStore.IsArchived(ctx, "arch", "wf-100", "u100"); err != nil || !ok {
		t.Fatalf("IsArchived: %v %v", ok, err)
	}
	if err := testStore.DeleteArchived(ctx, "arch", "wf-100", "u100"); err != nil {
		t.Fatal(err)
	}
	if ok, err := testStore.IsArchived(ctx, "arch", "wf-100", "u100"); err != nil || ok {
		t.Fatalf("IsArchived after delete: %v %v", ok, err)
	}
	if err := testStore.DeleteArchived(ctx, "arch", "wf-100", "u100"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}
}

// A workflow changed since it was read, or too large to archive, stays an object.
func TestArchiveRefuses(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	stale := finishedWorkflow(t, "arch", "stale", "u1")
	cur := *stale.Workflow
	cur.Status.Message = "changed"
	if err := testStore.Update(ctx, &cur, Raw{}); err != nil {
		t.Fatal(err)
	}
	big := finishedWorkflow(t, "arch", "big", "u2")
	noise := make([]byte, 1200<<10)
	rand.Read(noise)
	big.Workflow.Status.Message = base64.StdEncoding.EncodeToString(noise) // 1.6 MB, 1.2 MB compressed
	ok := finishedWorkflow(t, "arch", "ok", "u3")
	errs, err := testStore.ArchiveWorkflows(ctx, "arch", []*v4.ArchivedWorkflow{stale, big, ok})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], ErrConflict) || !errors.Is(errs[1], ErrTooLarge) || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	for _, name := range []string{"stale", "big"} {
		if _, err := testStore.Get(ctx, v4.KindWorkflow, "arch", name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := testStore.Get(ctx, v4.KindWorkflow, "arch", "ok"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ok: %v", err)
	}
}

// Archivers on several servers (here goroutines) lose none of each other's entries.
func TestArchiveConcurrent(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	var parts [4][]*v4.ArchivedWorkflow
	for i := range 240 {
		parts[i%4] = append(parts[i%4], finishedWorkflow(t, "arch", fmt.Sprintf("c-%03d", i), "u"))
	}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			if errs, err := testStore.ArchiveWorkflows(ctx, "arch", p); err != nil {
				t.Error(err)
			} else {
				for _, err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	page, _, err := testStore.ListArchived(ctx, "arch", "", 1000)
	if err != nil || len(page) != 240 {
		t.Fatalf("%d archived: %v", len(page), err)
	}
}

// Entries past their expiry are dropped; the others stay.
func TestExpireArchived(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var entries []*v4.ArchivedWorkflow
	for i := range 50 {
		e := finishedWorkflow(t, "arch", fmt.Sprintf("e-%02d", i), "u")
		if i%2 == 0 {
			e.ExpiresAt = now.Add(-time.Minute)
		} else if i%5 == 0 {
			e.ExpiresAt = now.Add(time.Hour)
		}
		entries = append(entries, e)
	}
	if _, err := testStore.ArchiveWorkflows(ctx, "arch", entries); err != nil {
		t.Fatal(err)
	}
	n, err := testStore.ExpireArchived(ctx, now)
	if err != nil || n != 25 {
		t.Fatalf("dropped %d: %v", n, err)
	}
	page, _, err := testStore.ListArchived(ctx, "arch", "", 100)
	if err != nil || len(page) != 25 {
		t.Fatalf("%d left: %v", len(page), err)
	}
	if n, err := testStore.ExpireArchived(ctx, now); err != nil || n != 0 {
		t.Fatalf("dropped %d more: %v", n, err)
	}
}

// A chunk that is not one berth wrote is an error, never a panic.
func FuzzDecodeChunk(f *testing.F) {
	good, err := encodeChunk([]*v4.ArchivedWorkflow{{Workflow: &v4.Workflow{Metadata: v4.ObjectMeta{Name: "a"}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("{}\n"))
	f.Add([]byte("{\"entries\":1}\n\x1f\x8b"))
	f.Fuzz(func(t *testing.T, val []byte) {
		entries, err := decodeChunk("k", val)
		if err == nil {
			for _, e := range entries {
				_ = e.SortKey()
			}
		}
	})
}
