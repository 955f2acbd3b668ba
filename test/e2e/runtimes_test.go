package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// Per-workload runtimes (docs/runtimes.md) on a containerd node: the node offers runc
// (found in PATH) and a handler its operator declared by path; pods naming either run,
// a pod naming a runtime no node offers stays pending with the reason, and one naming a
// path is refused at admission.
func TestPerWorkloadRuntimes(t *testing.T) {
	requireRoot(t)
	if why := drivertest.ContainerdMissing(); why != "" {
		if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
			t.Fatal("BERTH_REQUIRE_CONTAINERD=1 but:", why)
		}
		t.Skip(why)
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed")
	}
	ctd := startTestContainerd(t)
	s := startServer(t, t.TempDir())
	a := startAgent(t, s, "rt-node", "22400-22449", "--container-runtime", "containerd", "--containerd-address", ctd.Address,
		"--container-runtimes", "myrunc="+runc, "--allow-privileged") // HOST networking is a privilege
	s.cleanupApps("e2e-rt")
	waitUntil(t, 30*time.Second, "the node's runtimes", func() bool {
		var n v4.Node
		if err := json.Unmarshal([]byte(s.mustBerth("get", "node", a.name, "-o", "json")), &n); err != nil {
			return false
		}
		rts := n.Spec.Attributes.Set[v4.AttrContainerRuntimes]
		return strings.Contains(strings.Join(rts, ","), "myrunc") && strings.Contains(strings.Join(rts, ","), "runc")
	})
	t.Run("runc and a declared handler run", func(t *testing.T) {
		for _, rt := range []string{"runc", "myrunc"} {
			name := "rt-" + rt
			s.applySpec(t, withRuntime(appSpec{name: name, ns: "e2e-rt", mode: "HOST", containers: []string{
				container("web", "exec sleep 100000", ""),
			}}.json(), rt))
			tg := s.running(t, "e2e-rt", name, 1)[0]
			if r := s.execIn("e2e-rt", tg.Metadata.Name, "web", "sh", "-c", "echo in-"+rt); r.code != 0 || strings.TrimSpace(r.stdout) != "in-"+rt {
				t.Errorf("%s: exec exit %d: %q %q", rt, r.code, r.stdout, r.stderr)
			}
			s.mustBerth("delete", "application", name, "-n", "e2e-rt")
		}
	})
	t.Run("a runtime no node offers stays pending", func(t *testing.T) {
		s.applySpec(t, withRuntime(appSpec{name: "rt-kata", ns: "e2e-rt", mode: "HOST", containers: []string{
			container("web", "exec sleep 100000", ""),
		}}.json(), "kata"))
		var p *v4.Pending
		waitUntil(t, 30*time.Second, "the pending reason", func() bool {
			p = s.appStatus("e2e-rt", "rt-kata").Pending
			return p != nil
		})
		if p.Reason != v4.PendingUnschedulable || p.Check != "runtime" || !strings.Contains(p.Message, "runtime kata: the node does not offer it") {
			t.Errorf("pending %+v", p)
		}
		if tgs := s.taskGroups("e2e-rt", "rt-kata"); len(tgs) != 0 {
			t.Errorf("%d task groups placed", len(tgs))
		}
		s.mustBerth("delete", "application", "rt-kata", "-n", "e2e-rt")
	})
	t.Run("a path is refused at admission", func(t *testing.T) {
		for _, rt := range []string{"/bin/sh", "../x"} {
			r := s.berth(withRuntime(appSpec{name: "rt-path", ns: "e2e-rt", mode: "HOST", containers: []string{
				container("web", "exec sleep 100000", ""),
			}}.json(), rt), "apply", "-f", "-")
			if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "spec.template.spec.runtime") || !strings.Contains(out, "not a path") {
				t.Errorf("%s: exit %d: %s", rt, r.code, out)
			}
		}
	})
}

// withRuntime puts "runtime" into an appSpec's pod spec.
func withRuntime(spec, rt string) string {
	return strings.Replace(spec, `"networkMode":`, `"runtime":"`+rt+`","networkMode":`, 1)
}
