package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A process scaled 3 -> 0 -> 2 keeps its object: at 0 every instance stops (Stopping,
// then Stopped with no task group left, and the scale operation ends only then), and 2
// start again at indexes 0 and 1.
func TestScaleToZeroAndBack(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	ctx := context.Background()
	e.apply("web", 3, `{"policy":"Always"}`)
	e.eventually("3 task groups", func() bool { return len(e.taskGroups("web")) == 3 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.eventually("Running 3/3", func() bool { s := e.status("web"); return s.Phase == v4.AppRunning && s.Running == 3 })
	before, err := testStore.Get(ctx, v4.KindProcess, "ctl", "web")
	if err != nil {
		t.Fatal(err)
	}

	// As the scale route does: the operation, then spec.instance 0.
	if err := testStore.BeginOperation(ctx, "ctl", "web", v4.Operation{Type: v4.OpScale, Kind: v4.KindProcess, Name: "ctl/web"}, v4.OpScale); err != nil {
		t.Fatal(err)
	}
	e.apply("web", 0, `{"policy":"Always"}`)
	e.eventually("every instance asked to stop", func() bool {
		return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredStopped), []int{0, 1, 2})
	})
	e.eventually("Stopping", func() bool { s := e.status("web"); return s.Phase == v4.AppStopping && s.Instances == 0 })
	if op, err := testStore.Operation(ctx, v4.KindProcess, "ctl", "web"); err != nil || op == nil {
		t.Fatalf("the scale operation ended while instances still run: %v %v", op, err)
	}
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusKilled, time.Now().Add(-time.Second), time.Now())
	}
	e.eventually("no task group left", func() bool { return len(e.taskGroups("web")) == 0 })
	e.eventually("Stopped 0/0", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppStopped && s.Instances == 0 && s.Running == 0
	})
	e.eventually("the scale operation ended", func() bool {
		op, err := testStore.Operation(ctx, v4.KindProcess, "ctl", "web")
		return err == nil && op == nil
	})
	after, err := testStore.Get(ctx, v4.KindProcess, "ctl", "web")
	if err != nil {
		t.Fatalf("the process is gone at 0: %v", err)
	}
	if !after.GetMeta().CreationTimestamp.Equal(before.GetMeta().CreationTimestamp) {
		t.Fatalf("the process was made anew: created %v, then %v", before.GetMeta().CreationTimestamp, after.GetMeta().CreationTimestamp)
	}

	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("indexes 0 and 1 placed again", func() bool { return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredRunning), []int{0, 1}) })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.eventually("Running 2/2", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppRunning && s.Running == 2 && s.Instances == 2
	})
}

// A deployment scaled to 0 keeps its revisions and its application (at 0 instances),
// stops every instance, and comes back on the same revision; a new template applied
// at 0 makes a revision without starting anything, and nothing waits on it.
func TestDeploymentScaleToZeroKeepsRevisions(t *testing.T) {
	e := newDeployEnv(t)
	e.applyDeployment("one", "")
	e.waitSampling("revision 1 running", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 1 && d.Status.CurrentAvailable == 4
	})
	e.applyDeployment("two", "")
	e.waitSampling("revision 2 running alone", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && d.Status.CurrentAvailable == 4 && instancesOf("web-v1") == -1
	})

	e.applyDeploymentN("two", "", 0)
	e.waitSampling("Stopped with no instance left", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentStopped && len(e.listTaskGroups("ctl", nil)) == 0
	})
	d := e.deployment()
	if d.Status.Revision != 2 || len(d.Status.History) != 2 || instancesOf("web-v2") != 0 || d.Status.Instances != 0 {
		t.Fatalf("at 0: revision %d, %d revisions kept, web-v2 at %d, status %+v", d.Status.Revision, len(d.Status.History), instancesOf("web-v2"), d.Status)
	}
	e.eventually("no operation left", func() bool {
		op, err := testStore.Operation(context.Background(), v4.KindDeployment, "ctl", "web")
		return err == nil && op == nil
	})

	e.applyDeploymentN("two", "", 2)
	e.waitSampling("revision 2 running 2", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && d.Status.CurrentAvailable == 2 && instancesOf("web-v2") == 2
	})
	if d := e.deployment(); len(d.Status.History) != 2 {
		t.Fatalf("scaling back up made a revision: %+v", d.Status.History)
	}

	// A new template at 0: revision 3 exists, revision 2's instances stop, nothing hangs.
	e.applyDeploymentN("three", "", 0)
	e.waitSampling("revision 3 Stopped", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentStopped && d.Status.Revision == 3 && instancesOf("web-v3") == 0 &&
			instancesOf("web-v2") == -1 && len(e.listTaskGroups("ctl", nil)) == 0
	})
	if d := e.deployment(); len(d.Status.History) != 3 {
		t.Fatalf("history after a template at 0: %+v", d.Status.History)
	}
}
