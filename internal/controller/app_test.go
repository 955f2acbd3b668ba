package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

func indexes(tgs []*v4.TaskGroup, desired string) []int {
	var out []int
	for _, tg := range tgs {
		if desired == "" || tg.Spec.Desired == desired {
			out = append(out, tg.Spec.Index)
		}
	}
	slices.Sort(out)
	return out
}

func TestCreatesInstancesAndAggregatesStatus(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.apply("web", 3, `{"policy":"OnFailure"}`)
	e.eventually("3 task groups", func() bool { return len(e.taskGroups("web")) == 3 })
	tgs := e.taskGroups("web")
	if got := indexes(tgs, ""); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("indexes %v", got)
	}
	for _, tg := range tgs {
		if tg.Spec.Node == "" || tg.Status.Phase != v4.StatusStaging || tg.Spec.Desired != v4.DesiredRunning ||
			len(tg.Spec.Template.Spec.Processes) != 1 || !strings.HasPrefix(tg.Metadata.Name, strings.Split(tg.Metadata.Name, ".")[0]+".web.ctl.berth.") {
			t.Errorf("task group %+v", tg)
		}
	}
	e.eventually("Deploying", func() bool { return e.status("web").Phase == v4.AppDeploying })
	for _, tg := range tgs {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.eventually("Running 3/3", func() bool { s := e.status("web"); return s.Phase == v4.AppRunning && s.Running == 3 })
	if s := e.status("web"); s.LastPhase != v4.AppDeploying { // the phase before, as BCS's LastStatus
		t.Errorf("last phase %q, want %s", s.LastPhase, v4.AppDeploying)
	}
}

func TestRestartPolicyDelayAndMaxTimes(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("web", 1, `{"policy":"OnFailure","interval":1,"backoff":1,"maxtimes":2}`)
	e.eventually("a task group", func() bool { return len(e.taskGroups("web")) == 1 })
	first := e.taskGroups("web")[0]
	failed := time.Now()
	e.report(first, v4.StatusFailed, failed.Add(-time.Second), failed)
	e.eventually("a replacement", func() bool {
		tgs := e.taskGroups("web")
		return len(tgs) == 1 && tgs[0].Metadata.Name != first.Metadata.Name
	})
	second := e.taskGroups("web")[0]
	if d := second.Metadata.CreationTimestamp.Sub(failed.Truncate(time.Second)); d < time.Second {
		t.Errorf("replaced %v after the failure, want the 1 s interval", d)
	}
	if second.Spec.ReschedTimes != 1 || second.Spec.Index != 0 {
		t.Errorf("replacement %+v", second.Spec)
	}
	// Second failure: interval 1 + 1*backoff 1 = 2 s.
	failed = time.Now()
	e.report(second, v4.StatusFailed, failed.Add(-time.Second), failed)
	e.eventually("a second replacement", func() bool {
		tgs := e.taskGroups("web")
		return len(tgs) == 1 && tgs[0].Spec.ReschedTimes == 2
	})
	third := e.taskGroups("web")[0]
	if d := third.Metadata.CreationTimestamp.Sub(failed.Truncate(time.Second)); d < 2*time.Second {
		t.Errorf("second replacement after %v, want at least 2 s", d)
	}
	// maxtimes 2 reached: the third failure stays.
	e.report(third, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("Abnormal with the reason", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppAbnormal && strings.Contains(s.Message, "maxtimes 2 reached")
	})
	time.Sleep(3 * time.Second)
	if tgs := e.taskGroups("web"); len(tgs) != 1 || tgs[0].Metadata.Name != third.Metadata.Name {
		t.Errorf("no restart after maxtimes, got %d task groups", len(tgs))
	}
}

func TestScaleUpAndDownRemovesHighestIndexes(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.apply("web", 3, `{"policy":"Always"}`)
	e.eventually("3", func() bool { return len(e.taskGroups("web")) == 3 })
	e.apply("web", 5, `{"policy":"Always"}`)
	e.eventually("5", func() bool { return slices.Equal(indexes(e.taskGroups("web"), ""), []int{0, 1, 2, 3, 4}) })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("2, 3 and 4 asked to stop", func() bool {
		return slices.Equal(indexes(e.taskGroups("web"), v4.DesiredStopped), []int{2, 3, 4})
	})
	for _, tg := range e.taskGroups("web") {
		if tg.Spec.Desired == v4.DesiredStopped {
			e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
		}
	}
	e.eventually("only 0 and 1 left", func() bool { return slices.Equal(indexes(e.taskGroups("web"), ""), []int{0, 1}) })
	e.eventually("Running 2/2", func() bool { s := e.status("web"); return s.Phase == v4.AppRunning && s.Instances == 2 })
}

func TestDeleteStopsEverything(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("2", func() bool { return len(e.taskGroups("web")) == 2 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	if _, err := testStore.Delete(context.Background(), v4.KindProcess, "ctl", "web", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("both asked to stop", func() bool { return len(indexes(e.taskGroups("web"), v4.DesiredStopped)) == 2 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
	}
	e.eventually("none left", func() bool { return len(e.taskGroups("web")) == 0 })
}

func TestUnplaceableReportsReason(t *testing.T) {
	e := newEnv(t) // no nodes
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("the reason in the status", func() bool {
		s := e.status("web")
		return s.Phase == v4.AppAbnormal && strings.Contains(s.Message, "2 of 2 instances cannot be placed")
	})
	e.node("late")
	e.eventually("placed once a node comes", func() bool { return len(e.taskGroups("web")) == 2 })
	events := eventsEventually(t, "scheduling events", v4.EventFilter{Kind: v4.KindProcess, Namespace: "ctl", Name: "web"},
		func(events []v4.Event) bool {
			return hasReason(events, "FailedScheduling") && hasReason(events, "Scheduled")
		})
	if !hasReason(events, "FailedScheduling") || !hasReason(events, "Scheduled") {
		t.Errorf("events %+v", events)
	}
}

func TestUserUpdateKeepsStatus(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("web", 1, `{"policy":"Always"}`)
	e.eventually("Deploying", func() bool { return e.status("web").Phase == v4.AppDeploying })
	e.apply("web", 1, `{"policy":"Never"}`) // a user's update brings no status
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "web")
	if err != nil {
		t.Fatal(err)
	}
	if p := o.(*v4.Process); p.Status.Phase == "" || p.RestartPolicy.Policy != v4.RestartNever {
		t.Errorf("status lost or update not applied: %+v %+v", p.Status, p.RestartPolicy)
	}
}

// A workload the cache does not hold yet is read from etcd, not taken for deleted (which
// would stop its instances); one the cache holds is a copy the pass may change.
func TestWorkloadOfFallsBackToTheStore(t *testing.T) {
	e := newEnv(t)
	c := NewAppController(testStore, nil, e.opts())
	idle := cache.New(testStore, cache.Config{Kind: v4.KindProcess}) // never run: holds nothing
	c.apps = map[v4.Kind]*cacheView{v4.KindProcess: {cache: idle}}
	key := scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ctl", Name: "late"}
	e.apply("late", 1, `{"policy":"Always"}`)
	o, err := c.workloadOf(context.Background(), key)
	if err != nil || o.GetMeta().Name != "late" {
		t.Fatalf("a workload missing from the cache: %v, %v", o, err)
	}
	if _, err := testStore.Delete(context.Background(), v4.KindProcess, "ctl", "late", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.workloadOf(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted workload: %v", err)
	}

	running := e.caches.For(v4.KindProcess)
	<-running.Synced()
	c.apps[v4.KindProcess] = &cacheView{cache: running}
	e.apply("cached", 2, `{"policy":"Always"}`)
	key.Name = "cached"
	e.eventually("the cache holds it", func() bool { _, ok := running.Get("ctl", "cached"); return ok })
	o, err = c.workloadOf(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	workload(o).Spec.Instance = 7
	if cached, _ := running.Get("ctl", "cached"); workload(cached).Spec.Instance != 2 {
		t.Fatalf("changing the workload read changed the cached one")
	}
}
