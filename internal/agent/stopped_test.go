package agent

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
)

// An instance stopped on request while its agent was away (the controller keeps its task
// group, Desired Stopped) is killed when the agent comes back, not adopted as running;
// later restarts of the agent never start it again, and the other instance runs on.
func TestStoppedInstanceStaysStoppedAcrossRestarts(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	dir := t.TempDir()
	first := startAgent(t, c, dir, drv)
	runProcessTGs(t, "0.web.ns-a.c.1", "1.web.ns-a.c.1")
	first.stop()
	editTG(t, "1.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })

	second := startAgent(t, c, dir, drv)
	waitPhase(t, "1.web.ns-a.c.1", v4.StatusFinish)
	if _, stopped := drv.Stopped(taskID("1.web.ns-a.c.1")); !stopped {
		t.Fatal("the stopped instance's task was not stopped")
	}
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	second.stop()

	startAgent(t, c, dir, drv)
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	runProcessTGs(t, "2.web.ns-a.c.1") // once it runs, the agent has handled every task group
	if n := countOf(drv.Started(), taskID("1.web.ns-a.c.1")); n != 1 {
		t.Fatalf("the stopped instance was started %d times, want once: %v", n, drv.Started())
	}
	if drv.Running(taskID("1.web.ns-a.c.1")) {
		t.Fatal("the stopped instance runs")
	}
}

func countOf(ids []string, id string) int {
	n := 0
	for _, s := range ids {
		if s == id {
			n++
		}
	}
	return n
}
