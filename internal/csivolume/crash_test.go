package csivolume

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/csi/csitest"
)

// An agent that crashed between NodePublish and recording it finds a publication not
// marked done: the next Publish of the pod undoes it (unpublish, unstage, release) and
// publishes again, rather than trusting a half-done one.
func TestPublishAfterACrashMidPublish(t *testing.T) {
	requireRoot(t)
	p := startPlugin(t, csitest.Options{})
	e := newEnv(t, p.dir)
	e.plugins.set(csitest.DefaultName, p.client, true)
	e.server.grants["ns/db"] = grant(p.createVolume(t, "db"))
	ctx := context.Background()
	dir := e.target("ns/a", "data")
	src := &v4.CSIVolumeSource{Volume: "db"}
	if err := e.m.Publish(ctx, "ns/a", dir, "ns", "a", src); err != nil {
		t.Fatal(err)
	}
	rec, _, _ := e.m.loadRecord(dir)
	rec.Published = false
	if err := e.m.saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	if err := e.restart(t).Publish(ctx, "ns/a", dir, "ns", "a", src); err != nil {
		t.Fatal(err)
	}
	if !isMounted(t, dir) {
		t.Fatal("not published again")
	}
	checkCalls(t, p, []string{"NodeStageVolume", "NodePublishVolume",
		"NodeUnpublishVolume", "NodeUnstageVolume", "NodeStageVolume", "NodePublishVolume"})
	if err := e.m.Unpublish(ctx, "ns/a", dir); err != nil {
		t.Fatal(err)
	}
	checkClean(t, e)
}

// A staging no publication uses (a crash after the stage and before its publication's
// record, or a record lost) is unstaged by the sweep.
func TestSweepUnstagesOrphans(t *testing.T) {
	requireRoot(t)
	p := startPlugin(t, csitest.Options{})
	e := newEnv(t, p.dir)
	e.plugins.set(csitest.DefaultName, p.client, true)
	id := p.createVolume(t, "db")
	req := csi.NodeRequest{VolumeID: id, Capability: capabilityOf(grant(id)), StagingPath: e.m.stagingPath(csitest.DefaultName, id)}
	if staged, err := e.m.stage(context.Background(), p.client, req); err != nil || !staged {
		t.Fatalf("stage: %v, %v", staged, err)
	}
	if !isMounted(t, req.StagingPath) {
		t.Fatal("not staged")
	}
	e.restart(t).Sweep(context.Background(), func(string) bool { return true }, time0())
	checkCalls(t, p, []string{"NodeStageVolume", "NodeUnstageVolume"})
	checkClean(t, e)
}
