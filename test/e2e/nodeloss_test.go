package e2e

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestLostNodeIsReplacedAndItsStaleCopiesStopped stops an agent (SIGSTOP: no heartbeats,
// no reports, its processes keep running, as in a network partition). Within TTL + 5 s
// its node and task groups are Lost; restartPolicy Always replaces its instance on the
// other node at once; the default policy (OnFailure) replaces it only after its grace
// (hostRetainTime 4 s for "graced", the default 5 minutes for "onfail", which is not
// reached). When the agent resumes, it stops the replaced copies, and only those: the
// OnFailure instance it kept running is Running again.
func TestLostNodeIsReplacedAndItsStaleCopiesStopped(t *testing.T) {
	requireRoot(t)
	const ttl = 3 * time.Second
	s := startServer(t, t.TempDir(), "--node-ttl", ttl.String())
	pkgs := packageServer(t)
	a := startAgent(t, s, "lost-a", "26000-26199")
	b := startAgent(t, s, "lost-b", "26200-26399")
	const ns = "nodeloss"
	s.cleanupProcesses(ns)
	uri := pkgs.URL + "/web-demo.tar.gz"
	s.applySpec(t, webSpec{name: "always", ns: ns, instances: 2, uri: uri, user: "deploy", pwd: "s3cret",
		restart: `{"policy":"Always"}`}.json())
	s.applySpec(t, webSpec{name: "onfail", ns: ns, instances: 2, uri: uri, user: "deploy", pwd: "s3cret"}.json())
	const grace = 4 * time.Second
	s.applySpec(t, webSpec{name: "graced", ns: ns, instances: 2, uri: uri, user: "deploy", pwd: "s3cret",
		restart: `{"hostRetainTime":4}`}.json())
	onA := func(tgs []*v4.TaskGroup) *v4.TaskGroup {
		t.Helper()
		var found *v4.TaskGroup
		for _, tg := range tgs {
			if tg.Spec.Node == "lost-a" {
				if found != nil {
					t.Fatalf("spread placement put two instances of %s on lost-a", tg.Spec.Owner.Name)
				}
				found = tg
			}
		}
		if found == nil {
			t.Fatal("spread placement put no instance on lost-a")
		}
		return found
	}
	alwaysA := onA(s.running(t, ns, "always", 2))
	onfailA := onA(s.running(t, ns, "onfail", 2))
	gracedA := onA(s.running(t, ns, "graced", 2))

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer a.cmd.Process.Signal(syscall.SIGCONT)
	stopped := time.Now()
	waitUntil(t, ttl+5*time.Second, "lost-a and its task groups Lost", func() bool {
		lost := false
		for _, tg := range s.taskGroups(ns, "onfail") {
			lost = lost || tg.Metadata.Name == onfailA.Metadata.Name && tg.Status.Phase == v4.StatusLost
		}
		return lost && s.nodePhase("lost-a") == v4.NodeLost
	})
	lostAt := time.Now()
	t.Logf("lost after %s (ttl %s)", time.Since(stopped).Round(100*time.Millisecond), ttl)
	replaced := s.running(t, ns, "always", 2)
	for _, tg := range replaced {
		if tg.Spec.Node != "lost-b" {
			t.Fatalf("after the loss, %s runs on %s, want lost-b", tg.Metadata.Name, tg.Spec.Node)
		}
	}
	waitUntil(t, grace+30*time.Second, "graced's lost instance replaced on lost-b after its grace", func() bool {
		running := 0
		for _, tg := range s.taskGroups(ns, "graced") {
			if tg.Spec.Node == "lost-b" && tg.Status.Phase == v4.StatusRunning {
				running++
			}
		}
		return running == 2
	})
	if waited := time.Since(lostAt); waited < grace-time.Second { // lostAt is up to a poll late
		t.Fatalf("graced was replaced %s after the loss, before its grace of %s", waited, grace)
	}
	for _, tg := range s.taskGroups(ns, "onfail") {
		if tg.Spec.Node == "lost-b" && tg.Metadata.Name != onfailA.Metadata.Name && tg.Spec.Index == onfailA.Spec.Index {
			t.Fatalf("onfail's lost instance was replaced (%s) within its 5-minute grace", tg.Metadata.Name)
		}
	}
	if !alive(pidOf(alwaysA)) || !alive(pidOf(onfailA)) || !alive(pidOf(gracedA)) {
		t.Fatal("a partitioned agent's processes must keep running")
	}

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the stale copies on lost-a stopped", func() bool {
		return !alive(pidOf(alwaysA)) && !alive(pidOf(gracedA))
	})
	var last []string
	defer func() {
		if t.Failed() {
			t.Logf("onfail's task groups: %v", last)
		}
	}()
	waitUntil(t, 30*time.Second, "onfail's instance on lost-a Running again", func() bool {
		last = last[:0]
		for _, tg := range s.taskGroups(ns, "onfail") {
			last = append(last, tg.Metadata.Name+" "+tg.Spec.Node+" "+tg.Status.Phase+" "+tg.Status.Message)
		}
		for _, tg := range s.taskGroups(ns, "onfail") {
			if tg.Metadata.Name == onfailA.Metadata.Name {
				return tg.Status.Phase == v4.StatusRunning
			}
		}
		return false
	})
	// The agent's report of its task groups and its heartbeat are separate writes: the
	// node is Ready again at the heartbeat after the report, if not already.
	waitUntil(t, 10*time.Second, "lost-a Ready again", func() bool { return s.nodePhase("lost-a") == v4.NodeReady })
	if !alive(pidOf(onfailA)) {
		t.Fatalf("the agent stopped onfail's instance (pid %d), which was not replaced", pidOf(onfailA))
	}
	for _, tg := range s.taskGroups(ns, "onfail") {
		if tg.Metadata.Name == onfailA.Metadata.Name && pidOf(tg) != pidOf(onfailA) {
			t.Fatalf("onfail's instance on lost-a has pid %d, want the same %d", pidOf(tg), pidOf(onfailA))
		}
	}
	// No duplicates: what runs is exactly what the API says.
	time.Sleep(3 * time.Second)
	if n := webDemoProcesses(a.dataDir); n != 1 {
		t.Errorf("lost-a runs %d web-demo processes, want 1 (onfail's)", n)
	}
	if n := webDemoProcesses(b.dataDir); n != 5 {
		t.Errorf("lost-b runs %d web-demo processes, want 5 (2 always, 1 onfail, 2 graced)", n)
	}
	if n := len(s.taskGroups(ns, "always")); n != 2 {
		t.Errorf("always has %d task groups, want 2", n)
	}
}

// nodePhase returns a node's status phase as the API reports it.
func (s *devServer) nodePhase(name string) string {
	s.t.Helper()
	r := s.berth("", "get", "node", name, "-o", "json")
	if r.code != 0 {
		s.t.Fatalf("get node %s: %s", name, r.stderr)
	}
	var n v4.Node
	if err := json.Unmarshal([]byte(r.stdout), &n); err != nil {
		s.t.Fatalf("decode node: %v", err)
	}
	return n.Status.Phase
}
