package controller

import (
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

var planNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func planDep(policy string) *v4.Dependency {
	d := &v4.Dependency{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindDependency},
		Metadata:      v4.ObjectMeta{Name: "logagent", Namespace: "infra"},
		RestartPolicy: &v4.RestartPolicy{Policy: policy, Interval: 10},
		Spec: v4.DependencySpec{Template: v4.PodTemplate{Spec: v4.PodSpec{
			Processes: []v4.ProcessTask{{ProcName: "agent", StartCmd: "./agent"}}}}}}
	v4.Default(d)
	return d
}

// depPod is a pod of planDep on node for scope, created at created.
func depPod(name, node, scope, phase, desired string, created time.Time, tmpl v4.PodTemplate) *v4.TaskGroup {
	tg := &v4.TaskGroup{Metadata: v4.ObjectMeta{Name: name, Namespace: "infra", CreationTimestamp: created,
		Annotations: map[string]string{}},
		Spec:   v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindDependency, Name: "logagent"}, Node: node, Desired: desired, Template: tmpl},
		Status: v4.TaskGroupStatus{Phase: phase, FinishedAt: created.Add(time.Minute)}}
	if scope != "" {
		tg.Metadata.Annotations[depScopeAnnotation] = scope
	}
	return tg
}

// dependent is a task group of process ns/name on node declaring refs.
func dependent(ns, name, node, phase, desired string, refs ...v4.DependencyRef) *v4.TaskGroup {
	return &v4.TaskGroup{Metadata: v4.ObjectMeta{Name: "0." + name, Namespace: ns},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: name}, Node: node, Desired: desired,
			Template: v4.PodTemplate{Spec: v4.PodSpec{Dependencies: refs}}},
		Status: v4.TaskGroupStatus{Phase: phase}}
}

func TestDependentsCount(t *testing.T) {
	key := depKey{"infra", "logagent"}
	node := v4.DependencyRef{Name: "logagent", Namespace: "infra", Policy: v4.DependencyPolicyNode}
	nsPolicy := v4.DependencyRef{Name: "logagent", Namespace: "infra", Policy: v4.DependencyPolicyNamespace}
	other := v4.DependencyRef{Name: "cache", Namespace: "infra", Policy: v4.DependencyPolicyNode}
	tgs := []*v4.TaskGroup{
		dependent("shop", "a", "n1", v4.StatusRunning, v4.DesiredRunning, node),
		dependent("shop", "b", "n1", v4.StatusStaging, "", node),
		// deployd leaked the node policy of one ref into the next; here each ref stands alone.
		dependent("shop", "c", "n1", v4.StatusRunning, v4.DesiredRunning, other, nsPolicy),
		dependent("blog", "d", "n1", v4.StatusLost, v4.DesiredRunning, nsPolicy),
		dependent("shop", "e", "n2", v4.StatusRunning, v4.DesiredRunning, node),
		dependent("shop", "ended", "n1", v4.StatusFailed, v4.DesiredRunning, node),
		dependent("shop", "stopping", "n1", v4.StatusRunning, v4.DesiredStopped, node),
		dependent("shop", "unbound", "", v4.StatusStaging, v4.DesiredRunning, node),
		dependent("shop", "nodeps", "n1", v4.StatusRunning, v4.DesiredRunning),
		// a dependency's own pod never counts as a dependent
		depPod("0.logagent", "n1", "", v4.StatusRunning, v4.DesiredRunning, planNow, v4.PodTemplate{}),
	}
	got, owners := dependents(key, tgs)
	want := map[podKey]int{{node: "n1"}: 2, {node: "n1", scope: "shop"}: 1, {node: "n1", scope: "blog"}: 1, {node: "n2"}: 1}
	if len(got) != len(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("count of %v = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(owners) != 5 {
		t.Errorf("owners %v, want a, b, c, d, e", owners)
	}
}

func TestPlanPods(t *testing.T) {
	dep := planDep(v4.RestartAlways)
	tmpl := dep.Spec.Template
	changed := tmpl
	changed.Spec.Processes = []v4.ProcessTask{{ProcName: "agent", StartCmd: "./agent --v2"}}
	k1, k1ns := podKey{node: "n1"}, podKey{node: "n1", scope: "shop"}
	running := func(name string) *v4.TaskGroup {
		return depPod(name, "n1", "", v4.StatusRunning, v4.DesiredRunning, planNow.Add(-time.Hour), tmpl)
	}
	gc := 5 * time.Minute
	longAgo := planNow.Add(-time.Hour) // a term that started long ago
	type want struct {
		create  bool
		attempt int
		remove  []string
		cur     string
		wake    time.Duration
		event   string
		unused  time.Time
	}
	cases := []struct {
		name      string
		dep       *v4.Dependency
		refs      map[podKey]int
		pods      []*v4.TaskGroup
		unused    map[podKey]time.Time
		termStart time.Time
		want      map[podKey]want
	}{
		{name: "first dependent lands: start a pod", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			want: map[podKey]want{k1: {create: true}}},
		{name: "node and namespace pods are separate", dep: dep, refs: map[podKey]int{k1: 2, k1ns: 1}, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			want: map[podKey]want{k1: {cur: "p"}, k1ns: {create: true}}},
		{name: "in use: nothing to do", dep: dep, refs: map[podKey]int{k1: 2}, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			want: map[podKey]want{k1: {cur: "p"}}},
		{name: "last dependent just went: keep and wake at GC", dep: dep, refs: map[podKey]int{}, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			want: map[podKey]want{k1: {cur: "p", wake: gc, unused: planNow}}},
		{name: "unused for less than GC: keep", dep: dep, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			unused: map[podKey]time.Time{k1: planNow.Add(-4 * time.Minute)},
			want:   map[podKey]want{k1: {cur: "p", wake: time.Minute, unused: planNow.Add(-4 * time.Minute)}}},
		{name: "unused for GC: collect", dep: dep, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			unused: map[podKey]time.Time{k1: planNow.Add(-gc)},
			want:   map[podKey]want{k1: {remove: []string{"p"}, unused: planNow.Add(-gc)}}},
		{name: "no collection in the first GC of a term", dep: dep, pods: []*v4.TaskGroup{running("p")}, termStart: planNow.Add(-2 * time.Minute),
			unused: map[podKey]time.Time{k1: planNow.Add(-time.Hour)},
			want:   map[podKey]want{k1: {cur: "p", wake: 3 * time.Minute, unused: planNow.Add(-time.Hour)}}},
		{name: "dependents are back: not collected", dep: dep, refs: map[podKey]int{k1: 1}, pods: []*v4.TaskGroup{running("p")}, termStart: longAgo,
			unused: map[podKey]time.Time{k1: planNow.Add(-time.Hour)},
			want:   map[podKey]want{k1: {cur: "p"}}},
		{name: "spec changed: replace in place", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{depPod("old", "n1", "", v4.StatusRunning, v4.DesiredRunning, planNow, changed)},
			want: map[podKey]want{k1: {remove: []string{"old"}}}},
		{name: "old pod still stopping: wait before starting", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{depPod("old", "n1", "", v4.StatusRunning, v4.DesiredStopped, planNow, changed)},
			want: map[podKey]want{k1: {remove: []string{"old"}}}},
		{name: "failed pod with dependents: restart (Always)", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{depPod("f", "n1", "", v4.StatusFailed, v4.DesiredRunning, planNow.Add(-time.Hour), tmpl)},
			want: map[podKey]want{k1: {remove: []string{"f"}, create: true, attempt: 1}}},
		{name: "failed pod: back off first", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{depPod("f", "n1", "", v4.StatusFailed, v4.DesiredRunning, planNow.Add(-time.Minute-5*time.Second), tmpl)},
			want: map[podKey]want{k1: {cur: "f", wake: 5 * time.Second, event: "BackOff"}}},
		{name: "finished pod under Never: stays", dep: planDep(v4.RestartNever), refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{depPod("f", "n1", "", v4.StatusFinish, v4.DesiredRunning, planNow.Add(-time.Hour), tmpl)},
			want: map[podKey]want{k1: {cur: "f", event: "NotRestarted"}}},
		{name: "ended pod without dependents: removed", dep: dep, termStart: planNow,
			pods: []*v4.TaskGroup{depPod("f", "n1", "", v4.StatusFailed, v4.DesiredRunning, planNow.Add(-time.Hour), tmpl)},
			want: map[podKey]want{k1: {remove: []string{"f"}}}},
		{name: "duplicates: the newest stays", dep: dep, refs: map[podKey]int{k1: 1}, termStart: longAgo,
			pods: []*v4.TaskGroup{running("older"), depPod("newer", "n1", "", v4.StatusRunning, v4.DesiredRunning, planNow, tmpl)},
			want: map[podKey]want{k1: {cur: "newer", remove: []string{"older"}}}},
		{name: "dependency deleted: every pod goes, nothing starts", dep: nil, refs: map[podKey]int{k1: 2, k1ns: 1}, termStart: planNow,
			pods: []*v4.TaskGroup{running("p")},
			want: map[podKey]want{k1: {remove: []string{"p"}}, k1ns: {}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[podKey][]*v4.TaskGroup{}
			for _, p := range tc.pods {
				k := podKeyOf(p)
				pods[k] = append(pods[k], p)
			}
			unused := tc.unused
			if unused == nil {
				unused = map[podKey]time.Time{}
			}
			plans := planPods(planInput{dep: tc.dep, refs: tc.refs, pods: pods, unused: unused, now: planNow, termStart: tc.termStart, gc: gc})
			if len(plans) != len(tc.want) {
				t.Fatalf("%d plans, want %d: %+v", len(plans), len(tc.want), plans)
			}
			for _, p := range plans {
				w, ok := tc.want[p.key]
				if !ok {
					t.Fatalf("unexpected plan for %v", p.key)
				}
				var removed []string
				for _, tg := range p.remove {
					removed = append(removed, tg.Metadata.Name)
				}
				cur := ""
				if p.cur != nil {
					cur = p.cur.Metadata.Name
				}
				switch {
				case p.create != w.create || p.attempt != w.attempt:
					t.Errorf("%v: create %t attempt %d, want %t %d", p.key, p.create, p.attempt, w.create, w.attempt)
				case !slices.Equal(removed, w.remove):
					t.Errorf("%v: removes %v, want %v", p.key, removed, w.remove)
				case cur != w.cur:
					t.Errorf("%v: current %q, want %q", p.key, cur, w.cur)
				case p.wake != w.wake:
					t.Errorf("%v: wake in %v, want %v", p.key, p.wake, w.wake)
				case p.eventReason != w.event:
					t.Errorf("%v: event %q, want %q", p.key, p.eventReason, w.event)
				case !p.unused.Equal(w.unused):
					t.Errorf("%v: unused since %v, want %v", p.key, p.unused, w.unused)
				}
				if len(removed) > 0 && w.cur == "" && tc.dep != nil && p.reason == "" && tc.pods[0].Spec.Desired != v4.DesiredStopped {
					t.Errorf("%v: a removal without a reason", p.key)
				}
			}
		})
	}
}
