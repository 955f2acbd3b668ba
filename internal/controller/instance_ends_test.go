package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// endsMarked lists the indexes of web's task groups stopped with the instance's end.
func endsMarked(tgs []*v4.TaskGroup) []int {
	var out []int
	for _, tg := range tgs {
		if tg.Metadata.Annotations[v4.InstanceEndsAnnotation] == "true" {
			out = append(out, tg.Spec.Index)
		}
	}
	slices.Sort(out)
	return out
}

// A scale-down stops the surplus instances with their end marked, a deletion the others;
// a restart's old run is not marked (its instance goes on).
func TestInstanceEndsMarksScaleDownAndDeletion(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.apply("web", 3, `{"policy":"Always"}`)
	e.eventually("3", func() bool { return len(e.taskGroups("web")) == 3 })
	for _, tg := range e.taskGroups("web") {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
	e.apply("web", 1, `{"policy":"Always"}`)
	e.eventually("1 and 2 stopped for good", func() bool {
		tgs := e.taskGroups("web")
		return slices.Equal(indexes(tgs, v4.DesiredStopped), []int{1, 2}) && slices.Equal(endsMarked(tgs), []int{1, 2})
	})
	for _, tg := range e.taskGroups("web") {
		if tg.Spec.Desired == v4.DesiredStopped {
			e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
		}
	}
	e.eventually("only 0 left", func() bool { return slices.Equal(indexes(e.taskGroups("web"), ""), []int{0}) })
	if marked := endsMarked(e.taskGroups("web")); len(marked) != 0 {
		t.Fatalf("instance 0 marked %v while its workload wants it", marked)
	}
	if _, err := testStore.Delete(context.Background(), v4.KindProcess, "ctl", "web", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("0 stopped for good", func() bool { return slices.Equal(endsMarked(e.taskGroups("web")), []int{0}) })
}

// A deployment's task groups name it: its revisions run the same instances, which end
// only with the deployment (or its scale-down), not with a revision.
func TestInstanceEndsOfADeploymentsRevision(t *testing.T) {
	e := newTestEnv(t)
	e.caches.For(v4.KindDeployment)
	e.caches.For(v4.KindProcess)
	c := &base{caches: e.caches}
	ctx := context.Background()
	dep := &v4.Deployment{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindDeployment},
		Metadata: v4.ObjectMeta{Name: "web", Namespace: "ctl"}}
	dep.Spec.Instance = 2
	dep.Spec.Template = &v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web"}}}}
	if err := testStore.Create(ctx, dep, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	child := newChild(dep, 1, "h", 2)
	tg := newTaskGroup(child, nil, dep.Spec.Template, &scheduler.Request{}, scheduler.Placement{Name: "1.web-v1.ctl.c.1", Index: 1}, time.Now())
	if k, n := topOwner(tg); k != v4.KindDeployment || n != "web" {
		t.Fatalf("top owner %s %s, want the deployment", k, n)
	}
	e.eventually("the deployment in the cache", func() bool { _, ok := e.caches.For(v4.KindDeployment).Get("ctl", "web"); return ok })
	if c.instanceEnds(tg) {
		t.Fatal("instance 1 of a deployment of 2 ends with its revision (web-v1 is not even stored)")
	}
	tg.Spec.Index = 2
	if !c.instanceEnds(tg) {
		t.Fatal("instance 2 of a deployment of 2 does not end")
	}
	if _, err := testStore.Delete(ctx, v4.KindDeployment, "ctl", "web", ""); err != nil {
		t.Fatal(err)
	}
	tg.Spec.Index = 0
	e.eventually("instance 0 to end with the deployment", func() bool { return c.instanceEnds(tg) })
}
