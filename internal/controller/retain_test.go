package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// setNodePhase writes a node's phase as the node-lifecycle controller or a heartbeat
// would, and waits until the scheduler's snapshot has it.
func (e *env) setNodePhase(name, phase string) {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindNode, "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	n := o.(*v4.Node)
	n.Status.Phase = phase
	if err := testStore.Update(context.Background(), n, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
	probe, err := scheduler.RequestFor(&v4.Process{Workload: v4.Workload{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindProcess}, Metadata: v4.ObjectMeta{Name: "probe", Namespace: "ctl"},
		Spec: v4.WorkloadSpec{Instance: 1, Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "p", StartCmd: "./p"}}}}},
	}}, []int{0})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eventually("the snapshot sees "+name+" "+phase, func() bool {
		var ready bool
		e.feed.With(func(s *scheduler.Snapshot) { // on a clone: PlaceOn places
			ready = s.Clone().PlaceOn(probe, []string{name}, scheduler.Options{})[0].Ready
		})
		return ready == (phase == v4.NodeReady)
	})
}

func TestHostRetainTimeRestartsOnTheOldNode(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	e.apply("sticky", 1, `{"policy":"Always","hostRetainTime":60}`)
	e.eventually("placed", func() bool { return len(e.taskGroups("sticky")) == 1 })
	first := e.taskGroups("sticky")[0]
	e.report(first, v4.StatusRunning, time.Now(), time.Time{})
	e.report(first, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("a replacement on the same node", func() bool {
		tgs := e.taskGroups("sticky")
		return len(tgs) == 1 && tgs[0].Metadata.Name != first.Metadata.Name
	})
	if got := e.taskGroups("sticky")[0]; got.Spec.Node != first.Spec.Node || got.Spec.ReschedTimes != 1 {
		t.Fatalf("replacement on %s with reschedTimes %d, want %s and 1", got.Spec.Node, got.Spec.ReschedTimes, first.Spec.Node)
	}
}

func TestHostRetainTimeWaitsForTheOldNodeThenGivesUp(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	e.apply("sticky", 1, `{"policy":"Always","hostRetainTime":2}`)
	e.eventually("placed", func() bool { return len(e.taskGroups("sticky")) == 1 })
	first := e.taskGroups("sticky")[0]
	e.report(first, v4.StatusRunning, time.Now(), time.Time{})
	other := "node-b"
	if first.Spec.Node == "node-b" {
		other = "node-a"
	}
	// The node is lost: the instance waits for it instead of moving at once.
	e.setNodePhase(first.Spec.Node, v4.NodeLost)
	e.report(first, v4.StatusLost, time.Now().Add(-time.Second), time.Time{})
	e.eventually("the wait in the status", func() bool {
		return strings.Contains(e.status("sticky").Message, "waits for node "+first.Spec.Node)
	})
	if tgs := e.taskGroups("sticky"); len(tgs) != 1 || tgs[0].Metadata.Name != first.Metadata.Name {
		t.Fatalf("inside hostRetainTime the old run must stay and nothing be placed elsewhere: %d task groups", len(tgs))
	}
	// After hostRetainTime the replacement goes anywhere.
	e.eventually("the replacement on the other node", func() bool {
		tgs := e.taskGroups("sticky")
		return len(tgs) == 1 && tgs[0].Spec.Node == other
	})
}

func TestHostRetainTimeGetsTheOldNodeBackWhenItReturns(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	e.apply("sticky", 1, `{"policy":"Always","hostRetainTime":60}`)
	e.eventually("placed", func() bool { return len(e.taskGroups("sticky")) == 1 })
	first := e.taskGroups("sticky")[0]
	e.report(first, v4.StatusRunning, time.Now(), time.Time{})
	e.setNodePhase(first.Spec.Node, v4.NodeLost)
	e.report(first, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("the wait in the status", func() bool {
		return strings.Contains(e.status("sticky").Message, "waits for node "+first.Spec.Node)
	})
	e.setNodePhase(first.Spec.Node, v4.NodeReady)
	e.eventually("the replacement on the returned node", func() bool {
		tgs := e.taskGroups("sticky")
		return len(tgs) == 1 && tgs[0].Metadata.Name != first.Metadata.Name && tgs[0].Spec.Node == first.Spec.Node
	})
}
