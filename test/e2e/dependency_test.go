package e2e

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// asDependency turns a webSpec document into a dependency with the same pod.
func asDependency(t *testing.T, spec string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	m["kind"] = "dependency"
	m["restartPolicy"] = map[string]any{"policy": "Always", "interval": 1}
	delete(m["spec"].(map[string]any), "instance")
	b, _ := json.Marshal(m)
	return string(b)
}

// withDependency adds a dependency ref to a webSpec document's pod.
func withDependency(t *testing.T, spec, ns, name, policy string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	pod := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	pod["dependencies"] = []any{map[string]any{"name": name, "namespace": ns, "policy": policy}}
	b, _ := json.Marshal(m)
	return string(b)
}

// dependencyStatus reads a dependency's status.
func (s *devServer) dependencyStatus(ns, name string) v4.DependencyStatus {
	s.t.Helper()
	var d v4.Dependency
	if err := json.Unmarshal([]byte(s.mustBerth("get", "dependency", name, "-n", ns, "-o", "json")), &d); err != nil {
		s.t.Fatal(err)
	}
	return d.Status
}

// refCounts maps "node/scope" of a dependency's pods that hold a task group to their counts.
func refCounts(st v4.DependencyStatus) map[string]int {
	out := map[string]int{}
	for _, p := range st.Pods {
		if p.TaskGroup != "" {
			out[p.Node+"/"+p.Scope] = p.RefCount
		}
	}
	return out
}

// depPod returns the dependency pod on node for scope that is wanted running, or nil.
func depPod(tgs []*v4.TaskGroup, node, scope string) *v4.TaskGroup {
	for _, tg := range tgs {
		if tg.Spec.Node == node && tg.Metadata.Annotations["berth.io/dependency-scope"] == scope && tg.Spec.Desired != v4.DesiredStopped {
			return tg
		}
	}
	return nil
}

// A dependency shared by two applications on one node (policy node) runs once, with
// refcount 2; a third application of another namespace with policy namespace gets a pod
// of its own. The node pod outlives its first dependent, and goes --dependency-gc after
// the last, not before. A spec change replaces a pod in place; deleting a dependency in
// use is refused without --force.
func TestDependencyPodsSharedCountedCollectedAndUpdated(t *testing.T) {
	requireRoot(t)
	const gc = 4 * time.Second
	s := startServer(t, t.TempDir(), "--dependency-gc", gc.String())
	pkgs := packageServer(t)
	const node = "dep-node"
	startAgent(t, s, node, "22100-22199")
	for _, ns := range []string{"dep-a", "dep-b", "dep-c"} {
		s.cleanupProcesses(ns)
	}
	t.Cleanup(func() { // stop the dependency's pods while the agent still runs
		s.berth("", "delete", "dependency", "sidecar", "-n", "dep-infra", "--force", "--ignore-not-found")
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && len(s.taskGroups("dep-infra", "sidecar")) > 0 {
			time.Sleep(300 * time.Millisecond)
		}
	})

	web := func(name, ns string) webSpec { return webDemo(pkgs, ns, name, 1) }
	dep := web("sidecar", "dep-infra")
	s.applySpec(t, asDependency(t, dep.json()))
	if tgs := s.taskGroups("dep-infra", "sidecar"); len(tgs) != 0 {
		t.Fatalf("a dependency runs nothing before a dependent lands, got %d task groups", len(tgs))
	}

	s.applySpec(t, withDependency(t, web("web-a", "dep-a").json(), "dep-infra", "sidecar", "node"))
	s.applySpec(t, withDependency(t, web("web-b", "dep-b").json(), "dep-infra", "sidecar", "node"))
	s.running(t, "dep-a", "web-a", 1)
	s.running(t, "dep-b", "web-b", 1)
	nodePod := s.running(t, "dep-infra", "sidecar", 1)[0]
	waitUntil(t, 30*time.Second, "refcount 2 on the node pod", func() bool {
		return maps.Equal(refCounts(s.dependencyStatus("dep-infra", "sidecar")), map[string]int{node + "/": 2})
	})
	if nodePod.Spec.Node != node || !strings.HasPrefix(nodePod.Metadata.Name, "0.sidecar.dep-infra.") || !alive(pidOf(nodePod)) {
		t.Fatalf("node pod %s on %s, pid %d", nodePod.Metadata.Name, nodePod.Spec.Node, pidOf(nodePod))
	}
	if code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(port(nodePod, "http")) + "/healthz"); err != nil || code != 200 {
		t.Fatalf("the dependency pod does not serve: %d %q %v", code, body, err)
	}
	out := s.mustBerth("describe", "dependency", "sidecar", "-n", "dep-infra")
	if !strings.Contains(out, "REFCOUNT") || !strings.Contains(out, nodePod.Metadata.Name+"   Running   2") {
		t.Errorf("describe shows no refcount 2 for %s:\n%s", nodePod.Metadata.Name, out)
	}

	s.applySpec(t, withDependency(t, web("web-c", "dep-c").json(), "dep-infra", "sidecar", "namespace"))
	s.running(t, "dep-c", "web-c", 1)
	waitUntil(t, 60*time.Second, "a separate pod for namespace dep-c", func() bool {
		tgs := s.taskGroups("dep-infra", "sidecar")
		p := depPod(tgs, node, "dep-c")
		return len(tgs) == 2 && p != nil && p.Status.Phase == v4.StatusRunning &&
			maps.Equal(refCounts(s.dependencyStatus("dep-infra", "sidecar")), map[string]int{node + "/": 2, node + "/dep-c": 1})
	})

	r := s.berth("", "delete", "dependency", "sidecar", "-n", "dep-infra")
	if r.code == 0 || !strings.Contains(r.stderr, "used by 3 task groups") {
		t.Fatalf("deleting a dependency in use: exit %d, %s", r.code, r.stderr)
	}

	s.mustBerth("delete", "process", "web-a", "-n", "dep-a")
	waitUntil(t, 30*time.Second, "refcount 1", func() bool {
		return maps.Equal(refCounts(s.dependencyStatus("dep-infra", "sidecar")), map[string]int{node + "/": 1, node + "/dep-c": 1})
	})
	if p := depPod(s.taskGroups("dep-infra", "sidecar"), node, ""); p == nil || p.Metadata.Name != nodePod.Metadata.Name || !alive(pidOf(nodePod)) {
		t.Fatal("the node pod must stay while web-b uses it")
	}

	s.mustBerth("delete", "process", "web-b", "-n", "dep-b")
	var lastUsed time.Time
	waitUntil(t, 30*time.Second, "refcount 0 with lastUsed", func() bool {
		for _, p := range s.dependencyStatus("dep-infra", "sidecar").Pods {
			if p.Scope == "" && p.RefCount == 0 && !p.LastUsed.IsZero() {
				lastUsed = p.LastUsed
				return true
			}
		}
		return false
	})
	var removed time.Time
	waitUntil(t, gc+30*time.Second, "the unused node pod collected", func() bool {
		if p := depPod(s.taskGroups("dep-infra", "sidecar"), node, ""); p == nil {
			removed = time.Now()
			return true
		}
		return false
	})
	if early := removed.Sub(lastUsed); early < gc-200*time.Millisecond {
		t.Fatalf("the node pod was collected %s after its last dependent went, before --dependency-gc %s", early, gc)
	}
	waitUntil(t, 30*time.Second, "the collected pod's process ended", func() bool { return !alive(pidOf(nodePod)) })
	t.Logf("node pod collected %s after it was last used (--dependency-gc %s)", removed.Sub(lastUsed).Round(10*time.Millisecond), gc)
	// The server's own record: the Collected event, GC after lastUsed (the test's polls
	// through the CLI add their latency to `removed`).
	var events struct{ Items []v4.Event }
	if err := json.Unmarshal([]byte(s.eventsSay(`"Collected"`, "-n", "dep-infra", "--for", "dependency/sidecar", "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	collected := 0
	for _, ev := range events.Items {
		if ev.Reason != "Collected" {
			continue
		}
		collected++
		if d := ev.Time.Sub(lastUsed); d < gc || d > gc+2*time.Second {
			t.Errorf("Collected event %s after lastUsed, want within 2 s after %s: %s", d, gc, ev.Message)
		}
	}
	if collected != 1 {
		t.Errorf("%d Collected events, want 1", collected)
	}

	nsPod := depPod(s.taskGroups("dep-infra", "sidecar"), node, "dep-c")
	dep.memory = "80" // a spec change
	s.applySpec(t, asDependency(t, dep.json()))
	var replaced *v4.TaskGroup
	waitUntil(t, 60*time.Second, "the namespace pod replaced in place", func() bool {
		p := depPod(s.taskGroups("dep-infra", "sidecar"), node, "dep-c")
		if p != nil && p.Metadata.Name != nsPod.Metadata.Name && p.Status.Phase == v4.StatusRunning {
			replaced = p
			return true
		}
		return false
	})
	if replaced.Spec.Node != node || pidOf(replaced) == pidOf(nsPod) || alive(pidOf(nsPod)) || !alive(pidOf(replaced)) {
		t.Fatalf("replacement %s on %s pid %d (old pid %d alive %t)", replaced.Metadata.Name, replaced.Spec.Node, pidOf(replaced), pidOf(nsPod), alive(pidOf(nsPod)))
	}
	waitUntil(t, 30*time.Second, "refcount 1 on the replacement", func() bool {
		return maps.Equal(refCounts(s.dependencyStatus("dep-infra", "sidecar")), map[string]int{node + "/dep-c": 1})
	})

	s.mustBerth("delete", "dependency", "sidecar", "-n", "dep-infra", "--force")
	waitUntil(t, 30*time.Second, "pods of the force-deleted dependency gone", func() bool {
		return len(s.taskGroups("dep-infra", "sidecar")) == 0 && !alive(pidOf(replaced))
	})
}
