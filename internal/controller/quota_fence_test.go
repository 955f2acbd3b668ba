package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// userAdmission is what a server's admission of a user's write in ctl reads: the
// namespace's quota fence with its objects (the objects are what it would judge).
func userAdmission(t *testing.T) *store.QuotaFence {
	t.Helper()
	_, rev, err := testStore.NamespaceObjectsFenced(context.Background(), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	f := &store.QuotaFence{}
	f.See("ctl", rev)
	return f
}

// userWrite applies process name (one instance of 0.1 cpu) in ctl carrying the
// admission's fence, as a server writes what its admission judged.
func userWrite(t *testing.T, f *store.QuotaFence, name string) error {
	t.Helper()
	docs, err := v4.Parse(fmt.Appendf(nil, `{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"ctl"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"p","startCmd":"./p","resources":{"limits":{"cpu":"0.1","memory":"8"}}}]}}}}`, name))
	if err != nil {
		t.Fatal(err)
	}
	_, err = testStore.Apply(store.WithQuotaFence(context.Background(), f), docs)
	return err
}

// A controller's pass and a user's write admitted on another server are never both
// judged against one count: the one that commits second finds the namespace's quota
// fence moved and counts again. Here the user's write goes first and the pass's create
// is refused, then the pass counts again and goes first, and the user's write is refused.
func TestQuotaGateFencesPassWrites(t *testing.T) {
	setQuota(t, quota.List{quota.Instances: 5})
	e := newTestEnv(t)
	c := newBase(testStore, e.feed, e.opts(), storetest.QuietLogger())
	ctx := context.Background()
	run := func(name string) *v4.TaskGroup {
		return &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Name: name, Namespace: "ctl"},
			Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindJob, Name: "batch"}, Node: "n1", Desired: v4.DesiredRunning,
				Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "w", StartCmd: "./w"}}}}}}
	}
	gate, err := c.quotaGate(ctx, "ctl")
	if err != nil || gate == nil {
		t.Fatalf("gate %v, err %v", gate, err)
	}
	if err := userWrite(t, userAdmission(t), "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.createAll(gate.fenced(ctx), []*v4.TaskGroup{run("batch-0")}); !errors.Is(err, store.ErrQuotaFence) {
		t.Fatalf("the pass's create after the user's write: %v, want ErrQuotaFence", err)
	}
	if runs := e.listTaskGroups("ctl", nil); len(runs) != 0 {
		t.Fatalf("%d task groups written by a pass that lost its fence", len(runs))
	}

	gate, err = c.quotaGate(ctx, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	if got := gate.used[quota.Instances]; got != 1 {
		t.Fatalf("the new count has %v instances, want the user's 1", got)
	}
	late := userAdmission(t) // counted before the pass writes
	if _, err := c.createAll(gate.fenced(ctx), []*v4.TaskGroup{run("batch-0")}); err != nil {
		t.Fatalf("the pass's create after counting again: %v", err)
	}
	if err := userWrite(t, late, "second"); !errors.Is(err, store.ErrQuotaFence) {
		t.Fatalf("the user's write counted before the pass's create: %v, want ErrQuotaFence", err)
	}
}

// The controllers' writes of what their quota gate admitted carry the fence, so a user's
// write counted before them counts again: a job's run, and a daemonset grown to a new
// node (its stored count of nodes, which its quota charges, written before the instance).
func TestControllerWritesMoveTheQuotaFence(t *testing.T) {
	cases := []struct {
		name  string
		start func(t *testing.T) *env
		grow  func(e *env)
		// grown is whether the write the user's admission did not count was made.
		grown func(e *env) bool
	}{
		{name: "job run",
			start: func(t *testing.T) *env { return newJobEnv(t, "n1") },
			grow:  func(e *env) { e.applyJob(`,"completions":1`) },
			grown: func(e *env) bool { return len(e.runs()) == 1 }},
		{name: "daemonset on a new node",
			start: func(t *testing.T) *env {
				e := newDSEnv(t, "n1")
				e.applyDS("./agent", "")
				e.eventually("node n1's instance, counted", func() bool { return len(e.onNodes()) == 1 && e.dsStatus().Desired == 1 })
				return e
			},
			grow:  func(e *env) { e.node("n2") },
			grown: func(e *env) bool { return len(e.onNodes()) == 2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setQuota(t, quota.List{quota.Instances: 10})
			e := tc.start(t)
			counted := userAdmission(t)
			tc.grow(e)
			e.eventually("the controller's write", func() bool { return tc.grown(e) })
			if err := userWrite(t, counted, "late"); !errors.Is(err, store.ErrQuotaFence) {
				t.Fatalf("a user's write counted before the controller's: %v, want ErrQuotaFence", err)
			}
			if err := userWrite(t, userAdmission(t), "late"); err != nil {
				t.Fatalf("the same write counted again: %v", err)
			}
		})
	}
}
