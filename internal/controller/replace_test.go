package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// setCommand updates the process's start command: a new pod template that running
// instances do not run until replaced.
func (e *env) setCommand(name, cmd string) {
	e.t.Helper()
	for range 10 {
		o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", name)
		if err != nil {
			e.t.Fatal(err)
		}
		p := o.(*v4.Process)
		p.Spec.Template.Spec.Processes[0].StartCmd = cmd
		if err := testStore.Update(context.Background(), p, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatalf("could not update %s", name)
}

// replacing returns the move replacements of the process that are not Running yet.
func (e *env) replacing(name string) []*v4.TaskGroup {
	var out []*v4.TaskGroup
	for _, tg := range e.taskGroups(name) {
		if tg.Metadata.Annotations[v4.MovedFromAnnotation] != "" && tg.Status.Phase != v4.StatusRunning {
			out = append(out, tg)
		}
	}
	return out
}

func replace(t *testing.T, e *env, name string, n *int) *v4.Operation {
	t.Helper()
	_, op, err := RequestReplace(e.ctx, testStore, v4.KindProcess, "ctl", name, v4.ReplaceRequest{Instances: n})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A replace moves the instances that do not run the stored template one at a time, the
// next once the previous replacement runs; it skips an instance already on the template
// and one stopped on purpose, and ends when none is left.
func TestReplaceOneAfterAnother(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.runningProcess("web", 4)
	e.setStopped("web", 2)
	e.eventually("instance 2 asked to stop", func() bool { return e.byIndex("web")[2].Spec.Desired == v4.DesiredStopped })
	e.report(e.byIndex("web")[2], v4.StatusKilled, time.Now().Add(-time.Second), time.Now())
	e.setCommand("web", "./web --v2")
	// Instance 1 runs the new template already (moved after the update).
	src := e.byIndex("web")[1]
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{}, ""); err != nil {
		t.Fatal(err)
	}
	var moved *v4.TaskGroup
	e.eventually("instance 1's replacement", func() bool {
		r := e.replacing("web")
		if len(r) == 1 {
			moved = r[0]
		}
		return moved != nil
	})
	e.report(moved, v4.StatusRunning, time.Now(), time.Time{})
	e.operationEnded("web")
	before := e.byIndex("web")

	op := replace(t, e, "web", nil)
	if op == nil || op.Type != v4.OpReplace || op.Target != before[0].Metadata.Name {
		t.Fatalf("operation %+v, want a replace of instance 0 first", op)
	}
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", before[3].Metadata.Name, v4.MoveRequest{}, ""); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a move during the replace: %v, want locked", err)
	}
	var order []int
	for len(order) < 2 {
		var repl []*v4.TaskGroup
		e.eventually("one replacement at a time", func() bool { repl = e.replacing("web"); return len(repl) > 0 })
		if len(repl) != 1 {
			t.Fatalf("%d replacements at once", len(repl))
		}
		if repl[0].Spec.Template.Spec.Processes[0].StartCmd != "./web --v2" {
			t.Fatalf("replacement runs %q", repl[0].Spec.Template.Spec.Processes[0].StartCmd)
		}
		order = append(order, repl[0].Spec.Index)
		e.report(repl[0], v4.StatusRunning, time.Now(), time.Time{})
		e.eventually("the replacement counted", func() bool { return len(e.replacing("web")) == 0 })
	}
	if !slices.Equal(order, []int{0, 3}) {
		t.Fatalf("replaced instances %v, want [0 3]", order)
	}
	e.operationEnded("web")
	after := e.byIndex("web")
	if after[1].Metadata.Name != before[1].Metadata.Name || after[2].Metadata.Name != before[2].Metadata.Name {
		t.Fatalf("instance 1 (on the template) or 2 (stopped) was replaced")
	}
	if after[2].Status.Phase != v4.StatusKilled {
		t.Fatalf("the stopped instance is %s", after[2].Status.Phase)
	}
	if !slices.Contains(e.reasons(v4.KindProcess, "web"), "Replaced") {
		t.Fatalf("no Replaced event: %v", e.reasons(v4.KindProcess, "web"))
	}
	// Nothing left to replace: no operation.
	if op := replace(t, e, "web", nil); op != nil {
		t.Fatalf("a replace with nothing to do began %+v", op)
	}
}

// ?instances=N replaces the first N only.
func TestReplaceFirstN(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.runningProcess("web", 3)
	before := e.byIndex("web")
	e.setCommand("web", "./web --v2")
	one := 1
	if op := replace(t, e, "web", &one); op == nil || op.Instances == nil || *op.Instances != 1 {
		t.Fatalf("operation %+v", op)
	}
	var repl []*v4.TaskGroup
	e.eventually("a replacement", func() bool { repl = e.replacing("web"); return len(repl) == 1 })
	if repl[0].Spec.Index != 0 {
		t.Fatalf("replaced instance %d first", repl[0].Spec.Index)
	}
	e.report(repl[0], v4.StatusRunning, time.Now(), time.Time{})
	e.operationEnded("web")
	if got := e.byIndex("web"); got[1].Metadata.Name != before[1].Metadata.Name || got[2].Metadata.Name != before[2].Metadata.Name {
		t.Fatal("an instance past the first was replaced")
	}
	zero := 0
	if op := replace(t, e, "web", &zero); op != nil {
		t.Fatalf("instances 0 began %+v", op)
	}
}

// A replacement no node can take ends the operation with a Warning; the old run stays.
func TestReplaceEndsWhenUnplaceable(t *testing.T) {
	e := newEnv(t, "node-1")
	e.runningProcess("web", 4) // at most 4 per node (env.apply's constraint)
	before := e.byIndex("web")
	e.setCommand("web", "./web --v2")
	replace(t, e, "web", nil)
	e.operationEnded("web")
	if !slices.Contains(e.reasons(v4.KindProcess, "web"), "ReplaceFailed") {
		t.Fatalf("no ReplaceFailed event: %v", e.reasons(v4.KindProcess, "web"))
	}
	got := e.byIndex("web")
	if got[0].Metadata.Name != before[0].Metadata.Name || got[0].Spec.Desired != v4.DesiredRunning ||
		!strings.Contains(got[0].Metadata.Annotations[v4.MoveFailedAnnotation], "can take instance 0") {
		t.Fatalf("instance 0 after the failed replace: %+v", got[0].Metadata)
	}
}

// The operation in etcd is the state: one whose move was not yet asked for (a server
// stopped in between) is carried on by the controller.
func TestReplaceResumesFromTheStoredOperation(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	before := e.runningProcess("web", 1)
	e.setCommand("web", "./web --v3")
	op := v4.Operation{Type: v4.OpReplace, Kind: v4.KindProcess, Name: "ctl/web", Target: before[0].Metadata.Name}
	if err := testStore.BeginOperation(e.ctx, "ctl", "web", op); err != nil {
		t.Fatal(err)
	}
	// Written again unchanged, it wakes the controller as a watch after a restart would;
	// the template was the newest before the operation was stored, so whichever wakes
	// the controller first, the replacement can only run it.
	e.setCommand("web", "./web --v3")
	var repl []*v4.TaskGroup
	e.eventually("a replacement", func() bool { repl = e.replacing("web"); return len(repl) == 1 })
	if repl[0].Spec.Template.Spec.Processes[0].StartCmd != "./web --v3" {
		t.Fatalf("replacement runs %q, want the newest template", repl[0].Spec.Template.Spec.Processes[0].StartCmd)
	}
	e.report(repl[0], v4.StatusRunning, time.Now(), time.Time{})
	e.operationEnded("web")
}

// Bad requests change nothing.
func TestReplaceRefusesBadInput(t *testing.T) {
	e := newEnv(t, "node-1")
	e.runningProcess("web", 1)
	e.setCommand("web", "./web --v2")
	var re *ReplaceError
	neg := -1
	if _, _, err := RequestReplace(e.ctx, testStore, v4.KindProcess, "ctl", "web", v4.ReplaceRequest{Instances: &neg}); !errors.As(err, &re) || re.Field != "instances" {
		t.Fatalf("instances -1: %v", err)
	}
	if _, _, err := RequestReplace(e.ctx, testStore, v4.KindProcess, "ctl", "nope", v4.ReplaceRequest{}); !errors.As(err, &re) || !re.NotFound {
		t.Fatalf("a missing process: %v", err)
	}
	if _, _, err := RequestReplace(e.ctx, testStore, v4.KindDeployment, "ctl", "web", v4.ReplaceRequest{}); !errors.As(err, &re) {
		t.Fatalf("a deployment: %v", err)
	}
	if op, _ := testStore.Operation(e.ctx, v4.KindProcess, "ctl", "web"); op != nil {
		t.Fatalf("operation %+v left by a refused replace", op)
	}
}

// An instance stopped while a replace moves it: its replacement and its run are asked to
// stop, nothing starts it again, and the replace goes on with the next instance.
func TestReplaceGoesOnPastAnInstanceStoppedDuringItsMove(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.runningProcess("web", 2)
	e.setCommand("web", "./web --v2")
	if op := replace(t, e, "web", nil); op == nil {
		t.Fatal("no replace began")
	}
	e.eventually("instance 0's replacement", func() bool {
		r := e.replacing("web")
		return len(r) == 1 && r[0].Spec.Index == 0
	})
	e.setStopped("web", 0)
	e.eventually("every run of instance 0 asked to stop", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Spec.Index == 0 && tg.Spec.Desired != v4.DesiredStopped {
				return false
			}
		}
		return true
	})
	for _, tg := range e.taskGroups("web") {
		if tg.Spec.Index == 0 {
			e.report(tg, v4.StatusKilled, time.Now().Add(-time.Second), time.Now())
		}
	}
	var next *v4.TaskGroup
	e.eventually("instance 1's replacement", func() bool {
		for _, tg := range e.replacing("web") {
			if tg.Spec.Index == 1 {
				next = tg
			}
		}
		return next != nil
	})
	e.report(next, v4.StatusRunning, time.Now(), time.Time{})
	e.operationEnded("web")
	for _, tg := range e.taskGroups("web") {
		if tg.Spec.Index == 0 && (tg.Spec.Desired != v4.DesiredStopped || tg.Status.Phase != v4.StatusKilled) {
			t.Fatalf("instance 0 runs again: %s wanted %q, %s", tg.Metadata.Name, tg.Spec.Desired, tg.Status.Phase)
		}
	}
}
