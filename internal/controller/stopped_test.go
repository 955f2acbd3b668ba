package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// setStopped writes the process's spec.stoppedInstances, as berth stop and start do.
func (e *env) setStopped(name string, stopped ...int) {
	e.t.Helper()
	for range 10 {
		o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", name)
		if err != nil {
			e.t.Fatal(err)
		}
		p := o.(*v4.Process)
		p.Spec.StoppedInstances = append([]int{}, stopped...)
		if err := testStore.Update(context.Background(), p, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatalf("could not set the stopped instances of %s", name)
}

// byIndex is the process's task groups keyed by index (one run each in these tests).
func (e *env) byIndex(name string) map[int]*v4.TaskGroup {
	out := map[int]*v4.TaskGroup{}
	for _, tg := range e.taskGroups(name) {
		out[tg.Spec.Index] = tg
	}
	return out
}

// An instance stopped on request is asked to stop, ends, and stays ended: the restart
// policy (Always) does not restart it, an update that leaves the list out keeps it
// stopped, and the status counts it. A start places a new run on the same node.
func TestStoppedInstanceStaysStoppedUntilStarted(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("2 task groups", func() bool { return len(e.taskGroups("web")) == 2 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.eventually("Running 2/2", func() bool { s := e.status("web"); return s.Phase == v4.AppRunning && s.Running == 2 })

	e.setStopped("web", 1)
	e.eventually("instance 1 asked to stop", func() bool {
		return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredStopped), []int{1})
	})
	stopped := e.byIndex("web")[1]
	e.report(stopped, v4.StatusKilled, time.Now().Add(-time.Second), time.Now())
	e.eventually("status: 1 running, 1 stopped", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppRunning && s.Running == 1 && s.Stopped == 1 && s.Instances == 2
	})
	e.apply("web", 2, `{"policy":"Always"}`) // an update without the list keeps it
	time.Sleep(time.Second)                  // a few passes: nothing may restart it
	tgs := e.byIndex("web")
	if len(e.taskGroups("web")) != 2 || tgs[1].Metadata.Name != stopped.Metadata.Name || tgs[1].Status.Phase != v4.StatusKilled {
		t.Fatalf("the stopped instance was restarted or replaced: %+v", tgs[1])
	}
	if tgs[0].Spec.Desired != v4.DesiredRunning {
		t.Fatalf("instance 0 was stopped too: %+v", tgs[0].Spec)
	}

	e.setStopped("web")
	e.eventually("instance 1 placed again", func() bool {
		tg := e.byIndex("web")[1]
		return tg != nil && tg.Metadata.Name != stopped.Metadata.Name && tg.Spec.Desired == v4.DesiredRunning
	})
	again := e.byIndex("web")[1]
	if again.Spec.Node != stopped.Spec.Node || again.Spec.ReschedTimes != stopped.Spec.ReschedTimes {
		t.Errorf("started on %s (restart %d), want %s (restart %d): a start is not a restart", again.Spec.Node,
			again.Spec.ReschedTimes, stopped.Spec.Node, stopped.Spec.ReschedTimes)
	}
	e.eventually("the stopped run removed", func() bool { return len(e.taskGroups("web")) == 2 })
	e.report(again, v4.StatusRunning, time.Now(), time.Time{})
	e.eventually("Running 2/2 again", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppRunning && s.Running == 2 && s.Stopped == 0
	})
}

// Every instance stopped: the application is Stopped, and its count stays.
func TestEveryInstanceStopped(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("2 task groups", func() bool { return len(e.taskGroups("web")) == 2 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.setStopped("web", 0, 1)
	e.eventually("Stopping", func() bool { return e.status("web").Phase == v4.AppStopping })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
	}
	e.eventually("Stopped 0 of 2", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppStopped && s.Instances == 2 && s.Stopped == 2 && s.Running == 0
	})
	if n := len(e.taskGroups("web")); n != 2 {
		t.Fatalf("%d task groups, want the 2 stopped runs kept", n)
	}
}

// A scale-down removes a stopped instance beyond the new count and forgets it; a
// scale-up then starts that index; a stopped instance below the count stays stopped.
func TestScaleKeepsTheRightInstancesStopped(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.apply("web", 3, `{"policy":"Always"}`)
	e.eventually("3 task groups", func() bool { return len(e.taskGroups("web")) == 3 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.setStopped("web", 0, 2)
	e.eventually("0 and 2 asked to stop", func() bool {
		return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredStopped), []int{0, 2})
	})
	for _, tg := range e.taskGroups("web") {
		if tg.Spec.Desired == v4.DesiredStopped {
			e.report(tg, v4.StatusKilled, time.Now().Add(-time.Second), time.Now())
		}
	}
	e.apply("web", 2, `{"policy":"Always"}`) // index 2 goes, and leaves the list
	e.eventually("index 2 removed", func() bool { return slices.Equal(indexes(e.taskGroups("web"), ""), []int{0, 1}) })
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := o.(*v4.Process).Spec.StoppedInstances; !slices.Equal(got, []int{0}) {
		t.Fatalf("stoppedInstances %v after the scale-down, want [0]", got)
	}
	e.apply("web", 4, `{"policy":"Always"}`)
	e.eventually("indexes 2 and 3 run, 0 stays stopped", func() bool {
		tgs := e.byIndex("web")
		return len(tgs) == 4 && tgs[2].Spec.Desired == v4.DesiredRunning && tgs[3].Spec.Desired == v4.DesiredRunning &&
			tgs[0].Spec.Desired == v4.DesiredStopped && tgs[0].Status.Phase == v4.StatusKilled
	})
}

// A deployment's stopped instance is stopped in its application, and a rollout keeps it
// stopped: the new revision never starts it, and the rollout does not wait for it.
func TestDeploymentRolloutKeepsStoppedInstance(t *testing.T) {
	e := newDeployEnv(t)
	e.applyDeployment("one", "")
	e.waitSampling("revision 1 running", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 1 && d.Status.CurrentAvailable == 4
	})
	for range 10 {
		d := e.deployment()
		d.Spec.StoppedInstances = []int{1}
		if err := testStore.Update(context.Background(), d, store.Raw{}); err == nil {
			break
		}
	}
	e.eventually("instance 1 of revision 1 stopped", func() bool {
		tgs := e.byIndex("web-v1")
		return tgs[1] != nil && tgs[1].Spec.Desired == v4.DesiredStopped && v4.Terminal(tgs[1].Status.Phase)
	})
	e.applyDeployment("two", "") // leaves stoppedInstances out: kept
	e.waitSampling("revision 2 rolled out", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && instancesOf("web-v1") == -1
	})
	if d := e.deployment(); !slices.Equal(d.Spec.StoppedInstances, []int{1}) || d.Status.Stopped != 1 {
		t.Fatalf("the deployment's stoppedInstances became %v, status.stopped %d", d.Spec.StoppedInstances, d.Status.Stopped)
	}
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "web-v2")
	if err != nil {
		t.Fatal(err)
	}
	if got := o.(*v4.Process).Spec.StoppedInstances; !slices.Equal(got, []int{1}) {
		t.Fatalf("revision 2's stoppedInstances %v, want [1]", got)
	}
	e.eventually("revision 2 runs 0, 2 and 3 only", func() bool {
		return slices.Equal(indexes(e.taskGroups("web-v2"), v4.DesiredRunning), []int{0, 2, 3}) && e.byIndex("web-v2")[1] == nil
	})
}
