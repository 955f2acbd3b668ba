package cli

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// berth get shows a workload's stopped instances next to the running count, and a task
// group asked to stop as stopping, then stopped once it ended.
func TestGetShowsStoppedInstances(t *testing.T) {
	p := &v4.Process{}
	p.Spec.Instance, p.Spec.StoppedInstances = 2, []int{1}
	p.Status = v4.WorkloadStatus{Phase: v4.AppRunning, Instances: 2, Running: 1, Stopped: 1}
	p.Spec.Template.Spec.Processes = []v4.ProcessTask{{ProcName: "web"}}
	if got := workloadColumns(v4.KindProcess).values(p); !slices.Equal(got, []string{"Running", "1/2 (1 stopped)", "web"}) {
		t.Errorf("row %q", got)
	}
	tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{Desired: v4.DesiredStopped}, Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}}
	if got := taskGroupPhase(tg); got != "Running,stopping" {
		t.Errorf("running, asked to stop: %q", got)
	}
	tg.Status.Phase = v4.StatusKilled
	if got := taskGroupPhase(tg); got != "Killed,stopped" {
		t.Errorf("ended, asked to stop: %q", got)
	}
	tg.Spec.Desired = v4.DesiredRunning
	if got := taskGroupPhase(tg); got != "Killed" {
		t.Errorf("ended, wanted running: %q", got)
	}
}
