package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// A finished workflow moves into the archive once its task groups are gone and the
// archive's delay passed: the object and its offloaded nodes go, the archive holds it
// with every node, and its ttlStrategy becomes its expiry there.
func TestWorkflowArchived(t *testing.T) {
	e := newWfEnv(t, func(c *WorkflowController) {
		c.opts.WorkflowArchive = WorkflowArchive{After: 300 * time.Millisecond}
		c.inlineBytes = 100 // the nodes are offloaded
	})
	e.applyWf(withSpec(wfDiamond, `"ttlStrategy":{"secondsAfterSuccess":3600}`))
	e.finish(e.waitSteps("wf.A")["wf.A"], 0, "x=1")
	bc := e.waitSteps("wf.B", "wf.C")
	e.finish(bc["wf.B"], 0)
	e.finish(bc["wf.C"], 0)
	e.finish(e.waitSteps("wf.D")["wf.D"], 0)
	done := e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if !done.NodesOffloaded {
		t.Fatal("the nodes were not offloaded")
	}
	ctx := context.Background()
	e.eventually("the workflow archived", func() bool {
		_, err := testStore.Get(ctx, v4.KindWorkflow, "ctl", "wf")
		return errors.Is(err, store.ErrNotFound)
	})
	got, err := testStore.GetArchived(ctx, "ctl", "wf", "")
	if err != nil {
		t.Fatal(err)
	}
	st := got.Workflow.Status
	if st.UID != done.UID || st.Phase != v4.WfSucceeded || st.NodesOffloaded || len(st.Nodes) != 5 {
		t.Fatalf("archived %+v", st)
	}
	if want := st.FinishedAt.Add(time.Hour); !got.ExpiresAt.Equal(want) {
		t.Errorf("expires %s, want %s", got.ExpiresAt, want)
	}
	e.eventually("the offloaded nodes deleted", func() bool {
		nodes, err := testStore.WorkflowNodes(ctx, "ctl", "wf", st.UID)
		return err == nil && len(nodes) == 0
	})
	if tgs := e.wfTaskGroups(); len(tgs) != 0 {
		t.Errorf("%d task groups left", len(tgs))
	}
}

// A workflow whose task groups are kept (podGC Never) or that a cron runs (its history
// limits bound those) stays an object.
func TestWorkflowNotArchived(t *testing.T) {
	e := newWfEnv(t, func(c *WorkflowController) {
		c.opts.WorkflowArchive = WorkflowArchive{After: time.Millisecond}
	})
	e.applyWf(keepSteps(wfDiamond))
	e.finish(e.waitSteps("wf.A")["wf.A"], 0, "x=1")
	bc := e.waitSteps("wf.B", "wf.C")
	e.finish(bc["wf.B"], 0)
	e.finish(bc["wf.C"], 0)
	e.finish(e.waitSteps("wf.D")["wf.D"], 0)
	e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	time.Sleep(2 * wfArchiveFlush)
	if _, err := testStore.Get(context.Background(), v4.KindWorkflow, "ctl", "wf"); err != nil {
		t.Fatalf("a workflow that keeps its task groups was archived: %v", err)
	}
	p := &wfPass{c: &WorkflowController{opts: Options{WorkflowArchive: WorkflowArchive{After: time.Millisecond}}},
		wf: &v4.Workflow{Metadata: v4.ObjectMeta{Labels: map[string]string{v4.CronWorkflowLabel: "nightly"}}},
		st: v4.WorkflowStatus{UID: "u", Phase: v4.WfSucceeded}, now: time.Now()}
	p.c.archiver = &wfArchiver{c: p.c}
	p.archive()
	if len(p.c.archiver.due) != 0 {
		t.Error("a cron's workflow was queued for the archive")
	}
}
