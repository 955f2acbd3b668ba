package executor

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Every task of a revocable task group is marked so for its driver, which gives it the
// lowest cpu weight (docs/policy.md, "Revocable capacity"); processes get their cpu
// request as containers do, so the drivers weigh both alike.
func TestRevocableTasks(t *testing.T) {
	res := &v4.Resources{Requests: &v4.ResourceList{CPU: "0.5"}, Limits: &v4.ResourceList{CPU: "2", Memory: "64"}}
	proc := func(name string) *v4.TaskGroup {
		return processTG(name, v4.ProcessTask{ProcName: "work", StartCmd: "sleep 30", Resources: res})
	}
	ctr := func(name string) *v4.TaskGroup {
		tg := containerTG(name, "work")
		tg.Spec.Template.Spec.Containers[0].Resources = res
		return tg
	}
	h := newHarness(t)
	for _, c := range []struct {
		name      string
		tg        *v4.TaskGroup
		revocable bool
	}{
		{"proc", proc("proc"), false},
		{"proc-revocable", proc("proc-revocable"), true},
		{"ctr", ctr("ctr"), false},
		{"ctr-revocable", ctr("ctr-revocable"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.tg.Spec.Revocable = c.revocable
			h.run(c.tg)
			h.rec.waitPhase(t, c.name, v4.StatusRunning)
			drv := h.proc
			if c.tg.Spec.Template.Spec.Containers != nil {
				drv = h.docker
			}
			tk, ok := drv.Task(id(c.name, "work"))
			if !ok {
				t.Fatal("the driver got no task")
			}
			if tk.Revocable != c.revocable || tk.CPURequest != 0.5 || tk.CPULimit != 2 {
				t.Errorf("revocable %v request %v limit %v, want %v 0.5 2", tk.Revocable, tk.CPURequest, tk.CPULimit, c.revocable)
			}
			want := uint64(512)
			if c.revocable {
				want = driver.MinCPUShares
			}
			if got := tk.CPUShares(); got != want {
				t.Errorf("cpu shares %d, want %d", got, want)
			}
		})
	}
}
