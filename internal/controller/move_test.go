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

// run builds a task group for splitRuns.
func run(name string, phase, desired string, ann ...string) *v4.TaskGroup {
	tg := &v4.TaskGroup{Metadata: v4.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec: v4.TaskGroupSpec{Desired: desired}, Status: v4.TaskGroupStatus{Phase: phase}}
	for i := 0; i+1 < len(ann); i += 2 {
		tg.Metadata.Annotations[ann[i]] = ann[i+1]
	}
	return tg
}

func names(tgs []*v4.TaskGroup) []string {
	var out []string
	for _, tg := range tgs {
		if tg != nil {
			out = append(out, tg.Metadata.Name)
		}
	}
	return out
}

func TestSplitRuns(t *testing.T) {
	const running, stopped = v4.DesiredRunning, v4.DesiredStopped
	from := v4.MovedFromAnnotation
	tests := []struct {
		name                 string
		tgs                  []*v4.TaskGroup
		cur, pending         string
		old                  []string
		moved, failedReplace string
	}{
		{name: "one run", tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, running)}, cur: "a"},
		{name: "newest is current", tgs: []*v4.TaskGroup{run("a", v4.StatusFailed, running), run("b", v4.StatusRunning, running)},
			cur: "b", old: []string{"a"}},
		{name: "a move keeps its source current while the replacement starts",
			tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, running, v4.MoveToAnnotation, "*"), run("b", v4.StatusStarting, running, from, "a")},
			cur: "a", pending: "b"},
		{name: "order does not matter",
			tgs: []*v4.TaskGroup{run("b", v4.StatusStaging, running, from, "a"), run("a", v4.StatusRunning, running)},
			cur: "a", pending: "b"},
		{name: "a ready replacement becomes current, the source goes",
			tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, running), run("b", v4.StatusRunning, running, from, "a")},
			cur: "b", old: []string{"a"}, moved: "b"},
		{name: "a replacement that ended fails the move",
			tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, running), run("b", v4.StatusFailed, running, from, "a")},
			cur: "a", old: []string{"b"}, failedReplace: "b"},
		{name: "a source that ended leaves the replacement current",
			tgs: []*v4.TaskGroup{run("a", v4.StatusFailed, running), run("b", v4.StatusStarting, running, from, "a")},
			cur: "b", old: []string{"a"}},
		{name: "a source being stopped after the move",
			tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, stopped), run("b", v4.StatusRunning, running, from, "a")},
			cur: "b", old: []string{"a"}},
		{name: "a replacement being stopped is not waited for",
			tgs: []*v4.TaskGroup{run("a", v4.StatusRunning, running), run("b", v4.StatusRunning, stopped, from, "a")},
			cur: "a", old: []string{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := splitRuns(tc.tgs)
			if got := names([]*v4.TaskGroup{r.cur}); !slices.Equal(got, []string{tc.cur}) {
				t.Errorf("cur %v, want %s", got, tc.cur)
			}
			if got := names([]*v4.TaskGroup{r.pending}); tc.pending != "" && !slices.Equal(got, []string{tc.pending}) || tc.pending == "" && r.pending != nil {
				t.Errorf("pending %v, want %q", got, tc.pending)
			}
			if got := names(r.old); !slices.Equal(got, tc.old) {
				t.Errorf("old %v, want %v", got, tc.old)
			}
			if got := names([]*v4.TaskGroup{r.moved}); tc.moved != "" && !slices.Equal(got, []string{tc.moved}) || tc.moved == "" && r.moved != nil {
				t.Errorf("moved %v, want %q", got, tc.moved)
			}
			if got := names([]*v4.TaskGroup{r.failed}); tc.failedReplace != "" && !slices.Equal(got, []string{tc.failedReplace}) || tc.failedReplace == "" && r.failed != nil {
				t.Errorf("failed %v, want %q", got, tc.failedReplace)
			}
		})
	}
}

func TestReadyWaitsForHealthChecks(t *testing.T) {
	checked := v4.PodSpec{Processes: []v4.ProcessTask{{HealthChecks: []v4.HealthCheck{{Type: v4.CheckHTTP}}}}}
	remote := v4.PodSpec{Processes: []v4.ProcessTask{{HealthChecks: []v4.HealthCheck{{Type: v4.CheckRemoteHTTP}}}}}
	tests := []struct {
		name    string
		pod     v4.PodSpec
		phase   string
		healthy *bool
		remote  *v4.RemoteHealth
		want    bool
	}{
		{"no checks, running", v4.PodSpec{}, v4.StatusRunning, nil, nil, true},
		{"no checks, starting", v4.PodSpec{}, v4.StatusStarting, nil, nil, false},
		{"checks, result unknown", checked, v4.StatusRunning, nil, nil, false},
		{"checks, unhealthy", checked, v4.StatusRunning, new(false), nil, false},
		{"checks, healthy", checked, v4.StatusRunning, new(true), nil, true},
		// Remote checks are run by the leader (remotecheck.go), into status.remote.
		{"remote checks, not answered yet", remote, v4.StatusRunning, nil, nil, false},
		{"remote checks, failing", remote, v4.StatusRunning, nil, &v4.RemoteHealth{Healthy: false}, false},
		{"remote checks, passing", remote, v4.StatusRunning, nil, &v4.RemoteHealth{Healthy: true}, true},
	}
	for _, tc := range tests {
		tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{Template: v4.PodTemplate{Spec: tc.pod}},
			Status: v4.TaskGroupStatus{Phase: tc.phase, Healthy: tc.healthy, Remote: tc.remote}}
		if got := ready(tg); got != tc.want {
			t.Errorf("%s: ready = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// tgByName returns one task group as stored (nil when gone).
func (e *env) tgByName(name string) *v4.TaskGroup {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindTaskGroup, "ctl", name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.TaskGroup)
}

// runningOn starts a process of n instances and reports them Running; it returns them.
func (e *env) runningProcess(name string, n int) []*v4.TaskGroup {
	e.t.Helper()
	e.apply(name, n, `{"policy":"Always"}`)
	e.eventually("placed", func() bool { return len(e.taskGroups(name)) == n })
	for _, tg := range e.taskGroups(name) {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.eventually("running", func() bool { s := e.status(name); return s.Running == n })
	return e.taskGroups(name)
}

// moveAnywhere asks to move src of the process "web" to whichever node the scheduler
// picks, and returns the replacement once it is stored.
func (e *env) moveAnywhere(src *v4.TaskGroup) *v4.TaskGroup {
	e.t.Helper()
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{}, ""); err != nil {
		e.t.Fatal(err)
	}
	var repl *v4.TaskGroup
	e.eventually("a replacement", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Metadata.Name != src.Metadata.Name {
				repl = tg
			}
		}
		return repl != nil
	})
	return repl
}

// operationEnded waits until the process name has no operation left.
func (e *env) operationEnded(name string) {
	e.t.Helper()
	e.eventually("the operation ended", func() bool {
		op, _ := testStore.Operation(e.ctx, v4.KindProcess, "ctl", name)
		return op == nil
	})
}

func TestMoveStartsTheReplacementFirst(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	tgs := e.runningProcess("web", 1)
	src := tgs[0]
	target := "node-2"
	if src.Spec.Node == "node-2" {
		target = "node-1"
	}
	_, op, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{Node: target}, "")
	if err != nil {
		t.Fatal(err)
	}
	if op.Type != v4.OpMove || op.Target != src.Metadata.Name {
		t.Fatalf("operation %+v", op)
	}
	var repl *v4.TaskGroup
	e.eventually("a replacement on the target", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Metadata.Annotations[v4.MovedFromAnnotation] == src.Metadata.Name {
				repl = tg
			}
		}
		return repl != nil
	})
	if repl.Spec.Node != target || repl.Spec.Index != src.Spec.Index {
		t.Fatalf("replacement %s on %s index %d, want index %d on %s", repl.Metadata.Name, repl.Spec.Node, repl.Spec.Index, src.Spec.Index, target)
	}
	// Until the replacement runs, the source keeps running and counts.
	time.Sleep(300 * time.Millisecond)
	if cur := e.tgByName(src.Metadata.Name); cur == nil || cur.Spec.Desired == v4.DesiredStopped {
		t.Fatal("the source was stopped before its replacement ran")
	}
	if s := e.status("web"); s.Running != 1 || s.Phase != v4.AppRunning {
		t.Errorf("status during the move %+v", s)
	}
	if op, _ := testStore.Operation(e.ctx, v4.KindProcess, "ctl", "web"); op == nil || op.Type != v4.OpMove {
		t.Fatalf("the move's operation ended early: %+v", op)
	}
	e.report(repl, v4.StatusRunning, time.Now(), time.Time{})
	e.eventually("the source asked to stop", func() bool {
		cur := e.tgByName(src.Metadata.Name)
		return cur == nil || cur.Spec.Desired == v4.DesiredStopped
	})
	e.operationEnded("web")
	e.report(src, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
	e.eventually("only the replacement left", func() bool {
		tgs := e.taskGroups("web")
		return len(tgs) == 1 && tgs[0].Metadata.Name == repl.Metadata.Name
	})
}

func TestMoveFailsWhenTheReplacementFails(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	src := e.runningProcess("web", 1)[0]
	repl := e.moveAnywhere(src)
	if repl.Spec.Node == src.Spec.Node {
		t.Fatalf("moved to anywhere but %s, got %s", src.Spec.Node, repl.Spec.Node)
	}
	e.report(repl, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("the source keeps running, with the reason", func() bool {
		cur := e.tgByName(src.Metadata.Name)
		return cur != nil && cur.Spec.Desired != v4.DesiredStopped && cur.Metadata.Annotations[v4.MoveToAnnotation] == "" &&
			cur.Metadata.Annotations[v4.MoveFailedAnnotation] != "" && e.tgByName(repl.Metadata.Name) == nil
	})
	e.operationEnded("web")
}

func TestScaleDownDuringAMoveRemovesBothRuns(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	tgs := e.runningProcess("web", 2)
	var top *v4.TaskGroup
	for _, tg := range tgs {
		if tg.Spec.Index == 1 {
			top = tg
		}
	}
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", top.Metadata.Name, v4.MoveRequest{}, ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("a replacement", func() bool { return len(e.taskGroups("web")) == 3 })
	e.apply("web", 1, `{"policy":"Always"}`)
	e.eventually("both runs of index 1 asked to stop or gone", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Spec.Index == 1 && tg.Spec.Desired != v4.DesiredStopped && tg.Status.Phase != v4.StatusStaging {
				return false
			}
		}
		return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredRunning), []int{0})
	})
}

func TestMoveFailsWhenTheReplacementIsNotReadyInTime(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.MoveDeadline = 2 * time.Second
		return NewAppController(testStore, e.feed, opts)
	}, "node-1", "node-2")
	src := e.runningProcess("web", 1)[0]
	repl := e.moveAnywhere(src)
	// The replacement starts but never runs: after the deadline it is stopped, the source stays.
	e.report(repl, v4.StatusStarting, time.Now(), time.Time{})
	e.eventually("the replacement stopped and the move failed", func() bool {
		cur, r := e.tgByName(src.Metadata.Name), e.tgByName(repl.Metadata.Name)
		return cur != nil && cur.Spec.Desired != v4.DesiredStopped && cur.Metadata.Annotations[v4.MoveToAnnotation] == "" &&
			strings.Contains(cur.Metadata.Annotations[v4.MoveFailedAnnotation], "not ready within 2s") &&
			(r == nil || r.Spec.Desired == v4.DesiredStopped)
	})
	e.operationEnded("web")
}
