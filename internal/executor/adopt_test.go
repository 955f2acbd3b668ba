package executor

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
)

// leftover runs the tasks of tg in drv as a previous agent would have, and returns the
// driver's list.
func leftover(t *testing.T, drv *fake.Driver, tg *v4.TaskGroup, names ...string) []driver.State {
	t.Helper()
	for _, n := range names {
		drv.Add(driver.Task{ID: id(tg.Metadata.Name, n), Name: n, Labels: map[string]string{
			driver.LabelTaskGroup: testNS + "/" + tg.Metadata.Name, driver.LabelTask: n, driver.LabelNode: testNode,
		}})
	}
	states, err := drv.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return states
}

func pids(st v4.TaskGroupStatus) []int {
	var out []int
	for _, t := range st.Tasks {
		out = append(out, t.Info.Pid)
	}
	return out
}

func TestAdoptResumesMonitoring(t *testing.T) {
	srv := newHealthServer(t, http.StatusOK)
	h := newHarness(t)
	tg := checkedTG(srv.port(), httpCheck(3))
	states := leftover(t, h.proc, tg, "svc", "sidecar")
	// Another pod's task in the list is not this pod's.
	states = append(states, driver.State{ID: "x", Running: true, Labels: map[string]string{driver.LabelTaskGroup: testNS + "/other", driver.LabelTask: "svc"}})

	if !h.e.Adopt(context.Background(), tg, states) {
		t.Fatal("Adopt = false")
	}
	st := h.rec.waitPhase(t, "p", v4.StatusRunning)
	want := []int{states[1].Info.Pid, states[0].Info.Pid} // List is ordered by ID: sidecar first
	if got := pids(st); !slices.Equal(got, want) {
		t.Errorf("pids = %v, want %v", got, want)
	}
	if len(h.proc.Started()) != 0 {
		t.Error("adoption started a task")
	}
	if got := h.rec.phases("p"); !slices.Equal(got, []string{v4.StatusRunning}) {
		t.Errorf("phases = %v", got)
	}
	h.rec.wait(t, "p", "health checks resumed", healthy)
	if !h.e.Adopt(context.Background(), tg, states) {
		t.Error("second Adopt of a monitored pod = false")
	}
	h.run(tg) // known: not started again
	h.proc.Exit(id("p", "sidecar"), 1)
	st = h.rec.waitPhase(t, "p", v4.StatusFailed)
	if st.Tasks[1].Message != "exited with code 1" {
		t.Errorf("sidecar message = %q", st.Tasks[1].Message)
	}
	if _, ok := h.proc.Stopped(id("p", "svc")); !ok {
		t.Error("svc not stopped")
	}
	if len(h.proc.Started()) != 0 {
		t.Error("a task started")
	}
}

func TestAdoptEndedTasks(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(h *harness, tg *v4.TaskGroup) []driver.State
		msg     string
	}{
		{"a task exited", func(h *harness, tg *v4.TaskGroup) []driver.State {
			leftover(t, h.docker, tg, "a", "b")
			h.docker.Exit(id("web", "b"), 9)
			states, _ := h.docker.List(context.Background())
			return states
		}, "task b exited with code 9"},
		{"a task is missing", func(h *harness, tg *v4.TaskGroup) []driver.State {
			return leftover(t, h.docker, tg, "a")
		}, "task b is gone: the driver no longer has it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tg := containerTG("web", "a", "b")
			states := tt.prepare(h, tg)
			if !h.e.Adopt(context.Background(), tg, states) {
				t.Fatal("Adopt = false")
			}
			st := h.rec.waitPhase(t, "web", v4.StatusFailed)
			if st.Message != tt.msg {
				t.Errorf("message = %q, want %q", st.Message, tt.msg)
			}
			if grace, ok := h.docker.Stopped(id("web", "a")); !ok || grace != h.e.cfg.ForceGrace {
				t.Errorf("running task stopped = %v %v", grace, ok)
			}
			if st.Tasks[0].Info.Pid == 0 {
				t.Errorf("the running task's info is lost: %+v", st.Tasks[0].Info)
			}
			if got := h.rec.phases("web"); !slices.Equal(got, []string{v4.StatusFailed}) {
				t.Errorf("phases = %v", got)
			}
		})
	}
}

func TestAdoptNothing(t *testing.T) {
	h := newHarness(t)
	other := containerTG("other", "a")
	states := leftover(t, h.docker, other, "a")
	if h.e.Adopt(context.Background(), containerTG("web", "a"), states) {
		t.Error("Adopt without tasks = true")
	}
	if _, ok := h.e.Status(testNS, "web"); ok {
		t.Error("the pod is known")
	}
}

func TestAdoptAfterRestartKeepsTasks(t *testing.T) {
	// An agent restart: the first executor closes, the tasks keep running, a new executor
	// over the same drivers adopts them.
	h := newHarness(t)
	tg := containerTG("web", "a", "b")
	h.run(tg)
	before := pids(h.rec.waitPhase(t, "web", v4.StatusRunning))
	h.e.Close()

	e2 := New(h.e.cfg)
	defer e2.Close()
	states, _ := h.docker.List(context.Background())
	if !e2.Adopt(context.Background(), tg, states) {
		t.Fatal("Adopt = false")
	}
	st, _ := e2.Status(testNS, "web")
	if st.Phase != v4.StatusRunning || !slices.Equal(pids(st), before) {
		t.Errorf("adopted = %s %v, want Running %v", st.Phase, pids(st), before)
	}
	e2.Kill(testNS, "web")
	if st, _ := e2.Status(testNS, "web"); st.Phase != v4.StatusFinish {
		t.Errorf("phase after kill = %s", st.Phase)
	}
}

func TestAdoptEndedPodStaysFinal(t *testing.T) {
	h := newHarness(t)
	tg := containerTG("web", "a")
	h.run(tg)
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	h.docker.Exit(id("web", "a"), 1)
	h.rec.waitPhase(t, "web", v4.StatusFailed)
	n := len(h.rec.all("web"))
	states, _ := h.docker.List(context.Background())
	if !h.e.Adopt(context.Background(), tg, states) {
		t.Error("Adopt = false")
	}
	time.Sleep(20 * time.Millisecond)
	if len(h.rec.all("web")) != n {
		t.Error("a report after the terminal status")
	}
}
