package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// daemonSpec turns a webSpec into a daemonset of the same pod: one on every node.
func daemonSpec(w webSpec) string {
	w.instances = 0
	s := w.json()
	s = strings.Replace(s, `"kind":"process"`, `"kind":"daemonset"`, 1)
	return strings.Replace(s, `"spec":{"instance":0,`, `"spec":{`, 1)
}

// onNode returns the daemonset's newest task group on node, or nil.
func onNode(tgs []*v4.TaskGroup, node string) *v4.TaskGroup {
	var out *v4.TaskGroup
	for _, tg := range tgs {
		if tg.Spec.Node == node && (out == nil || tg.Metadata.CreationTimestamp.After(out.Metadata.CreationTimestamp) ||
			tg.Spec.ReschedTimes > out.Spec.ReschedTimes) {
			out = tg
		}
	}
	return out
}

func (s *devServer) daemonsetStatus(ns, name string) v4.DaemonsetStatus {
	s.t.Helper()
	var d v4.Daemonset
	if err := json.Unmarshal([]byte(s.mustBerth("get", "daemonset", name, "-n", ns, "-o", "json")), &d); err != nil {
		s.t.Fatal(err)
	}
	return d.Status
}

// A daemonset follows the nodes: one task group on the first agent, one on a second
// agent within seconds of its registration, nothing new on a disabled node, a deleted
// node's task group removed, and nothing left once the daemonset is deleted.
func TestDaemonsetFollowsNodes(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	pkgs := packageServer(t)
	// Port ranges start odd: 47xxx lies in the kernel's ephemeral range, where connect()
	// prefers even ports, and an agent's own keep-alive connection (the package download)
	// on the first port of its range would keep the pod from binding it.
	startAgent(t, s, "node-a", "27101-27199")
	s.cleanupDaemonset("e2e-ds", "shipper")
	spec := webSpec{name: "shipper", ns: "e2e-ds", uri: pkgs.URL + "/web-demo.tar.gz", user: "deploy", pwd: "s3cret",
		restart: `{"policy":"Always","interval":1}`}
	s.applySpec(t, daemonSpec(spec))
	first := s.running(t, "e2e-ds", "shipper", 1)[0]
	if first.Spec.Node != "node-a" || first.Spec.Owner.Kind != v4.KindDaemonset {
		t.Fatalf("task group %s on %s owned by %s", first.Metadata.Name, first.Spec.Node, first.Spec.Owner.Kind)
	}

	// A second agent joins: its task group runs within seconds of the registration.
	b := startAgent(t, s, "node-b", "27201-27299")
	var node v4.Node
	if err := json.Unmarshal([]byte(s.mustBerth("get", "node", "node-b", "-o", "json")), &node); err != nil {
		t.Fatal(err)
	}
	tgs := s.running(t, "e2e-ds", "shipper", 2)
	onB := onNode(tgs, "node-b")
	// The creation time is truncated to the second, so this overstates the delay.
	if took := time.Since(node.Metadata.CreationTimestamp); onB == nil || took > 10*time.Second {
		t.Fatalf("node-b's task group ran %s after the node registered (want at most 10 s)", took.Round(100*time.Millisecond))
	} else {
		t.Logf("node-b's task group ran within %s of its registration", took.Round(100*time.Millisecond))
	}
	orphanPid := pidOf(onB)
	waitUntil(t, 15*time.Second, "Running 2/2", func() bool {
		st := s.daemonsetStatus("e2e-ds", "shipper")
		return st.Phase == v4.AppRunning && st.Desired == 2 && st.Running == 2
	})
	if out := s.mustBerth("get", "ds", "-n", "e2e-ds"); !strings.Contains(out, "DESIRED") || !strings.Contains(out, "Running   2         2") {
		t.Errorf("berth get ds:\n%s", out)
	}

	// node-a disabled: what runs stays; once it ends, nothing new is placed there.
	s.mustBerth("node", "disable", "node-a")
	onA := onNode(s.taskGroups("e2e-ds", "shipper"), "node-a")
	if err := syscall.Kill(pidOf(onA), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the disabled node in the status", func() bool {
		return strings.Contains(s.daemonsetStatus("e2e-ds", "shipper").Message, "node node-a is disabled")
	})
	time.Sleep(3 * time.Second) // three restart intervals
	if tg := onNode(s.taskGroups("e2e-ds", "shipper"), "node-a"); tg.Metadata.Name != onA.Metadata.Name || tg.Status.Phase == v4.StatusRunning {
		t.Fatalf("a disabled node got a new task group: %s %s", tg.Metadata.Name, tg.Status.Phase)
	}
	out := s.mustBerth("describe", "ds", "shipper", "-n", "e2e-ds")
	for _, want := range []string{"Task Groups:", onA.Metadata.Name, onB.Metadata.Name, "Scheduled", "NotRestarted"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	// Enabled again: restarted there.
	s.mustBerth("node", "enable", "node-a")
	waitUntil(t, 30*time.Second, "restarted on node-a", func() bool {
		tg := onNode(s.taskGroups("e2e-ds", "shipper"), "node-a")
		return tg != nil && tg.Metadata.Name != onA.Metadata.Name && tg.Status.Phase == v4.StatusRunning
	})

	// node-b's agent dies and the operator deletes the node: its task group goes.
	b.kill()
	deleteNode(t, s, "node-b")
	waitUntil(t, 10*time.Second, "node-b's task group removed", func() bool {
		return onNode(s.taskGroups("e2e-ds", "shipper"), "node-b") == nil
	})
	// Its agent is gone, so nothing stopped the process it ran; an agent that came back
	// would. Stop it here.
	syscall.Kill(orphanPid, syscall.SIGKILL)

	// Delete the daemonset: everything stops.
	lastA := pidOf(onNode(s.taskGroups("e2e-ds", "shipper"), "node-a"))
	s.mustBerth("delete", "daemonset", "shipper", "-n", "e2e-ds")
	waitUntil(t, 30*time.Second, "no task groups left", func() bool { return len(s.taskGroups("e2e-ds", "shipper")) == 0 })
	waitUntil(t, 10*time.Second, "the process on node-a stopped", func() bool { return !alive(lastA) })
}

// cleanupDaemonset deletes the daemonset at the end of the test and waits for its task
// groups to go; processes of agents that were killed are killed here, so nothing keeps
// running after a failure.
func (s *devServer) cleanupDaemonset(ns, name string) {
	s.t.Cleanup(func() {
		var pids []int
		for _, tg := range s.taskGroups(ns, name) {
			pids = append(pids, pidOf(tg))
		}
		s.berth("", "delete", "daemonset", name, "-n", ns, "--ignore-not-found")
		deadline := time.Now().Add(40 * time.Second)
		for time.Now().Before(deadline) && len(s.taskGroups(ns, name)) > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		for _, pid := range pids {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

func deleteNode(t *testing.T, s *devServer, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.url+"/v1/nodes/"+name, nil)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /v1/nodes/%s: %d", name, resp.StatusCode)
	}
}
