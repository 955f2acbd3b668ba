package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// samePod is one pod spec, run as is on a Docker node and on a containerd node: a
// sidecar with a readiness check, an init task writing into an emptyDir, a main task
// serving on a host port in a BRIDGE network, and a runtime named (runc, which both
// offer, or crun). Only its name, its node and its runtime differ.
func samePod(name, node, runtime string) string {
	spec := appSpec{name: name, ns: "e2e", containers: []string{
		container("side", "touch /tmp/ready; exec sleep 100000",
			`,"lifecycle":{"sidecar":true},"healthChecks":[{"type":"COMMAND","role":"readiness","command":{"value":"test -f /tmp/ready"},"intervalSeconds":1}]`),
		container("prep", "echo prepared > /scratch/state", scratch+`,"lifecycle":{"init":true}`),
		webContainer("web", "8080", scratch+`,"ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"http"}]`),
	}}.json()
	spec = withRuntime(spec, runtime)
	return strings.Replace(spec, `"restartPolicy":`, `"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"CLUSTER","type":4,"set":{"item":["`+node+`"]}}]}]},"restartPolicy":`, 1)
}

// sameOnBoth runs samePod on the Docker node with runc and on the containerd node with
// runc and with crun (through its wrapper on a hybrid cgroup host): each runs with its
// init task done, its sidecar ready, its file written by the init task, and its server
// reached on its host port.
func sameOnBoth(t *testing.T, s *devServer, docker, ctrd string) {
	for _, run := range []struct{ rt, node, runtime string }{
		{"docker", docker, "runc"}, {"containerd", ctrd, "runc"}, {"containerd-crun", ctrd, "crun"},
	} {
		rt, node, name := run.rt, run.node, "same-"+run.rt
		s.applySpec(t, samePod(name, node, run.runtime))
		tg := s.running(t, "e2e", name, 1)[0]
		if tg.Spec.Node != node {
			t.Fatalf("%s placed on %s", name, tg.Spec.Node)
		}
		waitUntil(t, 30*time.Second, name+" ready", func() bool {
			tgs := s.taskGroups("e2e", name)
			if len(tgs) != 1 {
				return false
			}
			tg = tgs[0]
			ok, _ := tg.Readiness()
			return ok
		})
		for _, ts := range tg.Status.Tasks {
			if ts.Name == "prep" && (ts.Status != v4.StatusFinish || ts.Role != v4.RoleInit) {
				t.Errorf("%s: init task %s %q", rt, ts.Status, ts.Role)
			}
		}
		if r := s.execIn("e2e", tg.Metadata.Name, "web", "cat", "/scratch/state"); strings.TrimSpace(r.stdout) != "prepared" {
			t.Errorf("%s: the init task's file says %q (%s)", rt, r.stdout, r.stderr)
		}
		hostPort := port(tg, "http")
		waitUntil(t, 20*time.Second, name+"'s server on its host port", func() bool {
			code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(hostPort) + "/index.html")
			return err == nil && code == 200 && body == "hello\n"
		})
		s.mustBerth("delete", "application", name, "-n", "e2e")
	}
}
