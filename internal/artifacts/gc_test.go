package artifacts

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

func storeWorkflow(t *testing.T, ns, name, uid string) {
	t.Helper()
	wf := &v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns}, Status: v4.WorkflowStatus{UID: uid}}
	if err := testStore.Create(context.Background(), wf, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// archiveWorkflow moves the stored workflow ns/name into the workflow archive.
func archiveWorkflow(t *testing.T, ns, name string) {
	t.Helper()
	wf, err := store.Typed[*v4.Workflow](testStore, v4.KindWorkflow).Get(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := testStore.ArchiveWorkflows(context.Background(), ns, []*v4.ArchivedWorkflow{{Workflow: wf}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
}

// A round frees the artifacts of workflows that are gone (deleted, or made again under
// the same name: another uid), in the embedded store and in an S3 repository, and keeps
// the others: those of stored and of archived workflows.
func TestGCFreesArtifactsOfGoneWorkflows(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	endpoint, be := fakeS3(t)
	createS3Repo(t, "ns", "bucket", endpoint, false)
	e := openTestEmbedded(t, t.TempDir())
	r := NewRouter(RouterConfig{Store: testStore, Embedded: e, AllowPrivateEndpoints: true, Logger: storetest.QuietLogger()})
	storeWorkflow(t, "ns", "live", "u1")
	storeWorkflow(t, "ns", "new", "") // its uid is not chosen yet
	storeWorkflow(t, "ns", "old", "u7")
	archiveWorkflow(t, "ns", "old")
	put := func(repo, key, content string) {
		t.Helper()
		if _, err := r.Put(ctx, "ns", repo, key, strings.NewReader(content), 100); err != nil {
			t.Fatal(err)
		}
	}
	put("", "ns/live/u1/n/a", "kept")
	put("", "ns/live/u0/n/a", "an earlier live") // same content as nothing else
	put("", "ns/gone/u9/n/a", "kept")            // shares its blob with the live one
	put("", "ns/new/u5/n/a", "not judged yet")
	put("", "ns/old/u7/n/a", "archived")
	put("", "ns/loose", "not a workflow's")
	put("bucket", "ns/gone/u9/n/s3", "in the bucket")
	put("bucket", "ns/live/u1/n/s3", "in the bucket too")

	if err := NewGC(r).Round(ctx); err != nil {
		t.Fatal(err)
	}
	for key, kept := range map[string]bool{"ns/live/u1/n/a": true, "ns/live/u0/n/a": false, "ns/gone/u9/n/a": false,
		"ns/new/u5/n/a": true, "ns/old/u7/n/a": true, "ns/loose": true, "ns/gone/u9/n/s3": false, "ns/live/u1/n/s3": true} {
		rec, err := r.Lookup(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if (rec != nil) != kept {
			t.Errorf("%s: record %+v, want kept %v", key, rec, kept)
		}
	}
	if got := readAll(t, e, "ns/live/u1/n/a"); string(got) != "kept" {
		t.Fatalf("the live artifact sharing a freed key's blob: %q", got)
	}
	if _, err := be.HeadObject("arts", "berth/ns/gone/u9/n/s3"); err == nil {
		t.Error("the S3 object of a gone workflow is still there")
	}
	if _, err := be.HeadObject("arts", "berth/ns/live/u1/n/s3"); err != nil {
		t.Errorf("the S3 object of a live workflow: %v", err)
	}
	// Left: "kept", "not judged yet", "archived" and "not a workflow's".
	if n := refsOf(t, e, digestOf([]byte("an earlier live"))); n != 0 || len(blobFiles(t, e)) != 4 {
		t.Errorf("refs of the freed blob %d, blob files %d; want 0, 4", n, len(blobFiles(t, e)))
	}
}

// A round reads at most a page of records, and the next rounds go on from there.
func TestGCRoundsAreBounded(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	e := openTestEmbedded(t, t.TempDir())
	r := NewRouter(RouterConfig{Store: testStore, Embedded: e, Logger: storetest.QuietLogger()})
	n := gcKeysPerRound + 10
	for i := range n {
		if _, err := e.rec.link(ctx, "ns/gone/u/n/"+strconv.Itoa(i), Record{Holder: e.holder, Digest: digestOf([]byte("x")), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	g := NewGC(r)
	if err := g.Round(ctx); err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	left, _, _, err := r.rec.page(ctx, "", n)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 10 {
		t.Fatalf("%d records left after one round, want 10", len(left))
	}
	if err := g.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _, _, _ = r.rec.page(ctx, "", n); len(left) != 0 {
		t.Fatalf("%d records left after two rounds", len(left))
	}
}
