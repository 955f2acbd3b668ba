package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// containerIDs returns the container IDs of a task group's tasks.
func containerIDs(tg *v4.TaskGroup) []string {
	var ids []string
	for _, task := range tg.Status.Tasks {
		ids = append(ids, task.Info.ID)
	}
	return ids
}

// An agent killed with SIGKILL while two container pods run adopts them when it comes
// back: the same containers keep running, none is started twice. Then (where the test
// may restart the machine's dockerd: BERTH_E2E_RESTART_DOCKERD=1, set by CI, which owns
// it) dockerd is stopped and started again: its containers exit, the executor fails the
// pods, and the controller restarts them per their restartPolicy once dockerd answers.
func TestContainerPodsSurviveAgentAndDockerdRestarts(t *testing.T) {
	s, a := startDockerNode(t, "dk-restart", "29100-29199")
	s.applySpec(t, appSpec{name: "keep", ns: "e2e", instances: 2, restart: `{"policy":"OnFailure","interval":1}`, containers: []string{
		container("web", "exec sleep 100000", ""),
		container("side", "exec sleep 100000", ""),
	}}.json())
	before := s.running(t, "e2e", "keep", 2)
	var ids []string
	for _, tg := range before {
		ids = append(ids, containerIDs(tg)...)
	}
	slices.Sort(ids)

	a.kill()
	restarted := time.Now()
	a.start()
	// Adopted pods are reported again (Running, updated after the restart).
	var after []*v4.TaskGroup
	waitUntil(t, 30*time.Second, "the pods to be adopted", func() bool {
		after = s.taskGroups("e2e", "keep")
		n := 0
		for _, tg := range after {
			if tg.Status.Phase == v4.StatusRunning && tg.Status.Updated.After(restarted) {
				n++
			}
		}
		return n == 2 && len(after) == 2
	})
	var again []string
	for _, tg := range after {
		again = append(again, containerIDs(tg)...)
	}
	slices.Sort(again)
	running := nodeContainers(t, "dk-restart", false)
	slices.Sort(running)
	if !slices.Equal(ids, again) || len(running) != len(ids) {
		t.Fatalf("containers before %v, after %v, running %v: want the same four", ids, again, running)
	}
	for _, id := range running {
		if !slices.Contains(ids, id) {
			t.Errorf("a new container %s runs after the agent restart", id)
		}
	}

	if os.Getenv("BERTH_E2E_RESTART_DOCKERD") == "1" {
		dockerdRestartRestartsPods(t, s, before)
	} else {
		t.Log("not restarting dockerd: set BERTH_E2E_RESTART_DOCKERD=1 where the test may (CI does)")
	}

	// Deleted while the agent is away: its containers go when it comes back.
	a.kill()
	s.mustBerth("delete", "application", "keep", "-n", "e2e")
	time.Sleep(2 * time.Second)
	if n := len(nodeContainers(t, "dk-restart", false)); n != 4 {
		t.Fatalf("%d containers run while the agent is away, want 4", n)
	}
	a.start()
	waitUntil(t, 60*time.Second, "the task groups to go", func() bool { return len(s.taskGroups("e2e", "keep")) == 0 })
	waitNoContainers(t, "dk-restart", 60*time.Second)
}

// dockerdRestartRestartsPods restarts dockerd: its containers exit, the executor fails the
// pods, and the controller replaces them per their restartPolicy once dockerd answers.
func dockerdRestartRestartsPods(t *testing.T, s *devServer, before []*v4.TaskGroup) {
	t.Helper()
	restartDockerd(t)
	old := map[string]bool{}
	for _, tg := range before {
		old[tg.Metadata.Name] = true
	}
	waitUntil(t, 120*time.Second, "two new running pods after the dockerd restart", func() bool {
		tgs := s.taskGroups("e2e", "keep")
		n := 0
		for _, tg := range tgs {
			if tg.Status.Phase == v4.StatusRunning && !old[tg.Metadata.Name] {
				n++
			}
		}
		return n == 2 && len(tgs) == 2
	})
	waitUntil(t, 30*time.Second, "the application to count two running instances", func() bool {
		st := s.appStatus("e2e", "keep")
		return st.Running == 2 && st.Phase == "Running"
	})
	if n := len(nodeContainers(t, "dk-restart", false)); n != 4 {
		t.Errorf("%d containers run, want 4", n)
	}
}

// restartDockerd stops the machine's dockerd by its pid (its pid file) and starts it
// again the way .ci/run does, waiting for `docker info` each time.
func restartDockerd(t *testing.T) {
	t.Helper()
	// Alone: another package's tests (make test runs them beside this suite) may be
	// using dockerd; they wait for it to answer again.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	release, err := drivertest.RestartingDockerd(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	b, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		t.Fatalf("dockerd's pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("dockerd's pid file holds %q", b)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop dockerd: %v", err)
	}
	waitUntil(t, 60*time.Second, "dockerd to stop", func() bool { return syscall.Kill(pid, 0) != nil })
	cmd := exec.Command("sh", "-c", "nohup dockerd >/tmp/dockerd.log 2>&1 &")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // it outlives the test
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start dockerd: %v\n%s", err, out)
	}
	waitUntil(t, 60*time.Second, "dockerd to answer", func() bool { return exec.Command("docker", "info").Run() == nil })
}
