package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// newDepEnv runs the feed and a dependency controller against the shared etcd. The
// dependents are task groups the test writes itself, as the application controller would.
func newDepEnv(t *testing.T, gc time.Duration, nodes ...string) *env {
	t.Helper()
	return startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.DependencyGC = gc
		return NewDependencyController(testStore, e.feed, opts)
	}, nodes...)
}

// applyDependency creates or updates dependency infra/logagent running startCmd.
func (e *env) applyDependency(startCmd string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"dependency","metadata":{"name":"logagent","namespace":"infra"},
		"restartPolicy":{"policy":"Always"},
		"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":%q,"ports":[{"name":"http","hostPort":0}],
		"resources":{"limits":{"cpu":"0.25","memory":"32"}}}]}}}}`, startCmd)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

// addDependent writes a running task group of process ns/name on node that declares
// infra/logagent with policy.
func (e *env) addDependent(ns, name, node, policy string) *v4.TaskGroup {
	e.t.Helper()
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: fmt.Sprintf("0.%s.%s.berth.1", name, ns), Namespace: ns},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: name}, Node: node, Desired: v4.DesiredRunning,
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web"}},
				Dependencies: []v4.DependencyRef{{Name: "logagent", Namespace: "infra", Policy: policy}}}}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}}
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
	return tg
}

func (e *env) deleteTaskGroup(tg *v4.TaskGroup) {
	e.t.Helper()
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name, ""); err != nil {
		e.t.Fatal(err)
	}
}

// depPods lists the pods of infra/logagent that are wanted running.
func (e *env) depPods() []*v4.TaskGroup {
	e.t.Helper()
	return e.listTaskGroups("infra", func(tg *v4.TaskGroup) bool {
		return tg.Spec.Owner.Kind == v4.KindDependency && tg.Spec.Desired == v4.DesiredRunning
	})
}

func (e *env) depStatus() v4.DependencyStatus {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindDependency, "infra", "logagent")
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.Dependency).Status
}

// refCounts maps "node/scope" to the status's reference counts.
func (e *env) refCounts() map[string]int {
	out := map[string]int{}
	for _, p := range e.depStatus().Pods {
		if p.TaskGroup != "" {
			out[p.Node+"/"+p.Scope] = p.RefCount
		}
	}
	return out
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestDependencyPodSharedAndCollected(t *testing.T) {
	e := newDepEnv(t, time.Second, "node-1", "node-2")
	e.applyDependency("./agent")
	if len(e.depPods()) != 0 {
		t.Fatal("nothing runs before a dependent lands")
	}
	a := e.addDependent("shop", "a", "node-1", v4.DependencyPolicyNode)
	b := e.addDependent("blog", "b", "node-1", v4.DependencyPolicyNode)
	e.eventually("one shared pod, refcount 2", func() bool {
		return len(e.depPods()) == 1 && sameCounts(e.refCounts(), map[string]int{"node-1/": 2})
	})
	pod := e.depPods()[0]
	if pod.Spec.Node != "node-1" || pod.Spec.Index != 0 || pod.Metadata.Name[:14] != "0.logagent.inf" ||
		pod.Spec.Resources.CPU < 0.25 || len(pod.Spec.Ports) != 1 || pod.Spec.Ports[0].HostPort == 0 {
		t.Fatalf("pod %s: node %s index %d resources %+v ports %+v", pod.Metadata.Name, pod.Spec.Node, pod.Spec.Index, pod.Spec.Resources, pod.Spec.Ports)
	}
	c := e.addDependent("shop", "c", "node-1", v4.DependencyPolicyNamespace)
	e.eventually("a separate pod for namespace shop", func() bool {
		return len(e.depPods()) == 2 && sameCounts(e.refCounts(), map[string]int{"node-1/": 2, "node-1/shop": 1})
	})
	for _, p := range e.depPods() {
		if p.Spec.Node != "node-1" {
			t.Errorf("pod %s on %s, want node-1", p.Metadata.Name, p.Spec.Node)
		}
	}
	e.deleteTaskGroup(a)
	e.eventually("refcount 1", func() bool { return sameCounts(e.refCounts(), map[string]int{"node-1/": 1, "node-1/shop": 1}) })
	if len(e.depPods()) != 2 {
		t.Fatal("a pod with a dependent left must stay")
	}
	e.deleteTaskGroup(b)
	e.deleteTaskGroup(c)
	e.eventually("unused pods with lastUsed", func() bool {
		st := e.depStatus()
		return len(st.Pods) == 2 && st.Pods[0].RefCount == 0 && !st.Pods[0].LastUsed.IsZero() || len(e.depPods()) == 0
	})
	e.eventually("both pods collected", func() bool { return len(e.depPods()) == 0 })
	reasons := map[string]int{}
	eventsEventually(t, "pod events", v4.EventFilter{Namespace: "infra", Kind: v4.KindDependency, Name: "logagent"}, func(evs []v4.Event) bool {
		clear(reasons)
		for _, ev := range evs {
			reasons[ev.Reason]++
		}
		return reasons["Collected"] >= 2
	})
	if reasons["Scheduled"] != 2 || reasons["Collected"] != 2 || reasons["References"] == 0 {
		t.Errorf("events by reason %v", reasons)
	}
}

func TestDependencyUpdateRestartAndDelete(t *testing.T) {
	e := newDepEnv(t, time.Hour, "node-1")
	e.applyDependency("./agent")
	e.addDependent("shop", "a", "node-1", v4.DependencyPolicyNode)
	e.eventually("a pod", func() bool { return len(e.depPods()) == 1 })
	first := e.depPods()[0]

	e.applyDependency("./agent --v2")
	e.eventually("the pod replaced on its node", func() bool {
		pods := e.depPods()
		return len(pods) == 1 && pods[0].Metadata.Name != first.Metadata.Name
	})
	second := e.depPods()[0]
	if second.Spec.Node != "node-1" || second.Spec.Template.Spec.Processes[0].StartCmd != "./agent --v2" {
		t.Fatalf("replacement %s on %s runs %q", second.Metadata.Name, second.Spec.Node, second.Spec.Template.Spec.Processes[0].StartCmd)
	}

	e.report(second, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("restarted (Always)", func() bool {
		pods := e.depPods()
		return len(pods) == 1 && pods[0].Metadata.Name != second.Metadata.Name && pods[0].Spec.ReschedTimes == 1
	})

	if _, err := testStore.Delete(context.Background(), v4.KindDependency, "infra", "logagent", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("pods removed with the dependency", func() bool { return len(e.depPods()) == 0 })
	e.eventually("the dependent is warned", func() bool {
		evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "shop", Kind: v4.KindProcess, Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Reason == "DependencyMissing" && ev.Type == v4.EventWarning {
				return true
			}
		}
		return false
	})
}
