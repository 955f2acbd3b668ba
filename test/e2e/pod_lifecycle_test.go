package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The pod's lifecycle against the real binary and Docker, on one node that the cases
// share (docs/pods.md): init tasks in order before the main task, in a network that a
// holder keeps for them; a failing init task restarting the pod; a sidecar started
// first and stopped last; a preStop hook that runs before the stop signal.
func TestPodLifecycle(t *testing.T) {
	s, a := startDockerNode(t, "dk-pod", "29300-29349")
	t.Run("init tasks run in order before the main task", func(t *testing.T) { initTasksInOrder(t, s, a) })
	t.Run("a failing init task restarts the pod", func(t *testing.T) { failingInitRestarts(t, s) })
	t.Run("sidecar first and last, preStop before the signal", func(t *testing.T) { sidecarAndPreStop(t, s, a) })
	t.Run("readiness takes an instance out of its service without a restart", func(t *testing.T) { readinessOut(t, s) })
}

// scratch is an empty host path volume: a directory of the pod that its containers share.
const scratch = `,"volumes":[{"volume":{"mountPath":"/scratch"}}]`

func initTasksInOrder(t *testing.T, s *devServer, a *agentProc) {
	s.applySpec(t, appSpec{name: "inits", ns: "e2e", containers: []string{
		container("web", "cat /scratch/order; exec sleep 100000", scratch+`,"ports":[{"name":"http","containerPort":80,"hostPort":0}]`),
		container("first", "echo first >> /scratch/order", scratch+`,"lifecycle":{"init":true}`),
		container("second", "sleep 1; echo second >> /scratch/order", scratch+`,"lifecycle":{"init":true}`),
	}}.json())
	tg := s.running(t, "e2e", "inits", 1)[0]
	tasks := map[string]v4.TaskStatus{}
	for _, ts := range tg.Status.Tasks {
		tasks[ts.Name] = ts
	}
	first, second, web := tasks["first"], tasks["second"], tasks["web"]
	if first.Role != v4.RoleInit || first.Status != v4.StatusFinish || second.Status != v4.StatusFinish || web.Status != v4.StatusRunning {
		t.Fatalf("tasks %+v", tg.Status.Tasks)
	}
	if second.Info.StartAt.Before(first.Info.FinishAt) || web.Info.StartAt.Before(second.Info.FinishAt) {
		t.Errorf("not in order: first %s-%s, second %s-%s, web from %s", first.Info.StartAt, first.Info.FinishAt,
			second.Info.StartAt, second.Info.FinishAt, web.Info.StartAt)
	}
	if r := s.execIn("e2e", tg.Metadata.Name, "web", "cat", "/scratch/order"); r.code != 0 || r.stdout != "first\nsecond\n" {
		t.Errorf("the shared file says %q (exit %d), want first then second", r.stdout, r.code)
	}
	// The holder keeps the network the init tasks ran in, and the main task's port.
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=berth.node="+a.name, "--filter", "label=berth.task="+v4.NetworkHolderTask).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	holder := strings.Fields(string(out))
	if len(holder) != 1 {
		t.Fatalf("network holders %v, want one", holder)
	}
	if ip := inspect(t, holder[0], "{{.NetworkSettings.IPAddress}}"); ip == "" || ip != web.Info.IPAddress {
		t.Errorf("holder IP %q, web's %q", ip, web.Info.IPAddress)
	}
	if mode := inspect(t, web.Info.ID, "{{.HostConfig.NetworkMode}}"); !strings.HasPrefix(mode, "container:") {
		t.Errorf("web's network mode %q, want the holder's", mode)
	}
	s.mustBerth("delete", "application", "inits", "-n", "e2e")
	waitNoContainers(t, a.name, 60*time.Second)
}

func failingInitRestarts(t *testing.T, s *devServer) {
	// The instance volume outlives the first run: the init task fails once, then passes.
	vol := `,"volumes":[{"volume":{"mountPath":"/state","instance":true}}]`
	s.applySpec(t, appSpec{name: "retry", ns: "e2e", restart: `{"policy":"OnFailure","interval":1}`, containers: []string{
		container("check", "if [ -f /state/seen ]; then exit 0; fi; touch /state/seen; exit 3", vol+`,"lifecycle":{"init":true}`),
		container("web", "exec sleep 100000", ""),
	}}.json())
	tg := s.running(t, "e2e", "retry", 1)[0]
	if tg.Spec.ReschedTimes != 1 {
		t.Errorf("reschedTimes %d, want 1: the failed init task restarts the pod once", tg.Spec.ReschedTimes)
	}
	s.eventsSay("init task check exited with code 3", "-n", "e2e")
	s.mustBerth("delete", "application", "retry", "-n", "e2e")
}

func sidecarAndPreStop(t *testing.T, s *devServer, a *agentProc) {
	const grace = 20
	spec := strings.Replace(appSpec{name: "side", ns: "e2e", containers: []string{
		container("web", `trap 'echo term >> /scratch/log; exit 0' TERM; while true; do sleep 0.2; done`,
			scratch+`,"lifecycle":{"preStop":{"exec":{"command":"echo pre >> /scratch/log; sleep 2"}}}`),
		container("proxy", `trap 'echo proxy >> /scratch/log; exit 0' TERM; while true; do sleep 0.2; done`,
			scratch+`,"lifecycle":{"sidecar":true}`),
	}}.json(), `"gracePeriod":1`, `"gracePeriod":20`, 1)
	s.applySpec(t, spec)
	tg := s.running(t, "e2e", "side", 1)[0]
	web, proxy := tg.Status.Tasks[0], tg.Status.Tasks[1]
	if proxy.Role != v4.RoleSidecar || !proxy.Info.StartAt.Before(web.Info.StartAt) {
		t.Errorf("the sidecar started at %s, web at %s: want the sidecar first", proxy.Info.StartAt, web.Info.StartAt)
	}
	asked := time.Now()
	s.mustBerth("stop", "application", "side", "0", "-n", "e2e")
	var ended *v4.TaskGroup
	waitUntil(t, grace*time.Second, "the stopped instance to end", func() bool {
		tgs := s.taskGroups("e2e", "side")
		if len(tgs) == 1 && v4.Terminal(tgs[0].Status.Phase) {
			ended = tgs[0]
		}
		return ended != nil
	})
	web, proxy = ended.Status.Tasks[0], ended.Status.Tasks[1]
	if took := web.Info.FinishAt.Sub(asked); took < 2*time.Second {
		t.Errorf("web ended %s after the stop: the 2 s preStop hook did not delay its signal", took)
	}
	if proxy.Info.FinishAt.Before(web.Info.FinishAt) {
		t.Errorf("the sidecar ended at %s, before web at %s", proxy.Info.FinishAt, web.Info.FinishAt)
	}
	log := filepath.Join(a.dataDir, "pods", "e2e."+ended.Metadata.Name, "storage", "scratch", "log")
	if b, err := os.ReadFile(log); err != nil || string(b) != "pre\nterm\nproxy\n" {
		t.Errorf("%s says %q (%v): want the hook, then web's signal, then the sidecar's", log, b, err)
	}
	s.mustBerth("delete", "application", "side", "-n", "e2e")
	waitNoContainers(t, a.name, 60*time.Second)
}

func readinessOut(t *testing.T, s *devServer) {
	s.applySpec(t, appSpec{name: "ready", ns: "e2e", containers: []string{
		container("web", "touch /tmp/ready; exec sleep 100000", `,"ports":[{"name":"http","containerPort":80,"hostPort":-1}],
		"healthChecks":[{"type":"COMMAND","role":"readiness","command":{"value":"test -f /tmp/ready"},"intervalSeconds":1,"consecutiveFailures":1}]`),
	}}.json())
	s.applySpec(t, `{"apiVersion":"v4","kind":"service","metadata":{"name":"ready","namespace":"e2e"},
		"spec":{"selector":{"app":"ready"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`)
	defer s.mustBerth("delete", "service", "ready", "-n", "e2e")
	tg := s.running(t, "e2e", "ready", 1)[0]
	endpoints := func(want int) v4.Endpoints {
		var ep v4.Endpoints
		waitUntil(t, 30*time.Second, fmt.Sprintf("%d endpoints of service ready", want), func() bool {
			r := s.berth("", "get", "endpoints", "ready", "-n", "e2e", "-o", "json")
			ep = v4.Endpoints{}
			return r.code == 0 && json.Unmarshal([]byte(r.stdout), &ep) == nil && len(ep.Endpoints) == want
		})
		return ep
	}
	endpoints(1)
	if r := s.execIn("e2e", tg.Metadata.Name, "web", "/bin/busybox", "rm", "/tmp/ready"); r.code != 0 {
		t.Fatalf("exec: %+v", r)
	}
	ep := endpoints(0)
	if len(ep.NotReady) != 1 || !strings.Contains(ep.NotReady[0].Reason, "not ready") {
		t.Errorf("not ready %+v", ep.NotReady)
	}
	s.execIn("e2e", tg.Metadata.Name, "web", "/bin/busybox", "touch", "/tmp/ready")
	endpoints(1)
	now := s.taskGroups("e2e", "ready")
	if len(now) != 1 || now[0].Metadata.Name != tg.Metadata.Name || now[0].Status.Tasks[0].Info.ID != tg.Status.Tasks[0].Info.ID {
		t.Errorf("the instance was restarted: %s became %+v", tg.Metadata.Name, now)
	}
	s.mustBerth("delete", "application", "ready", "-n", "e2e")
}
