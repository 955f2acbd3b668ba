package executor

import (
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A process port with hostPort -1 takes no host port (docs/spec.md "Ports"): the
// scheduler allocates nothing for it, so the task gets no PORT_<name> for it, while the
// ports that have one get theirs.
func TestProcessPortWithoutHostPortHasNoEnv(t *testing.T) {
	h := newHarness(t)
	tg := processTG("np", v4.ProcessTask{ProcName: "svc", StartCmd: "./svc --port ${ports.http}",
		Ports: []v4.Port{{Name: "http"}, {Name: "debug", HostPort: -1}, {Name: "admin", HostPort: 8081}}})
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31001}, {Name: "admin", HostPort: 8081}}
	h.run(tg)
	h.rec.waitPhase(t, "np", v4.StatusRunning)
	tk, ok := h.proc.Task(id("np", "svc"))
	if !ok {
		t.Fatal("task not started")
	}
	var ports []string
	for _, e := range tk.Env {
		if strings.HasPrefix(e, "PORT_") {
			ports = append(ports, e)
		}
	}
	if want := []string{"PORT_http=31001", "PORT_admin=8081"}; !slices.Equal(ports, want) {
		t.Errorf("port env %q, want %q", ports, want)
	}
	if tk.Process.StartCmd != "./svc --port 31001" {
		t.Errorf("startCmd %q", tk.Process.StartCmd)
	}
}
