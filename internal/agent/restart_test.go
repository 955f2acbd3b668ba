package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// An agent that restarts adopts what runs: no second start, the same PIDs reported.
func TestRestartAdoptsRunningTasks(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	dir := t.TempDir()
	first := startAgent(t, c, dir, drv)
	createTG(t, processTG("0.web.ns-a.c.1"))
	pid := waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning).Status.Tasks[0].Info.Pid
	first.stop()
	if !drv.Running(taskID("0.web.ns-a.c.1")) {
		t.Fatal("stopping the agent stopped the workload")
	}
	// While the agent is away, the node-lifecycle controller marks the task group Lost.
	editTG(t, "0.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusLost })

	startAgent(t, c, dir, drv)
	tg := waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	if got := tg.Status.Tasks[0].Info.Pid; got != pid {
		t.Fatalf("adopted with pid %d, want %d", got, pid)
	}
	if n := len(drv.Started()); n != 1 {
		t.Fatalf("started %d times, want once", n)
	}
	// The adopted pod is monitored again: its exit is reported.
	drv.Exit(taskID("0.web.ns-a.c.1"), 1)
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusFailed)
}

// Task groups deleted (or moved) while the agent was down are stopped and removed when it
// comes back, with their pod directories and checkpoint entries; orphans the checkpoint
// does not know go too.
func TestRestartRemovesWhatIsGone(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	dir := t.TempDir()
	first := startAgent(t, c, dir, drv)
	runProcessTGs(t, "0.web.ns-a.c.1", "1.web.ns-a.c.1", "2.web.ns-a.c.1")
	first.stop()
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, testNS, "0.web.ns-a.c.1", ""); err != nil {
		t.Fatal(err)
	}
	editTG(t, "1.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Spec.Node = "node-2" })
	// A task nobody remembers (its checkpoint entry lost): berth's labels still say whose.
	orphan := processTG("9.old.ns-a.c.1")
	drv.Add(fakeTask(orphan))

	rec := &stopRecorder{Driver: drv, graces: map[string]time.Duration{}}
	startAgent(t, c, dir, drv, func(cfg *Config) { cfg.Drivers = map[string]driver.Driver{"process": rec} })
	for _, n := range []string{"0.web.ns-a.c.1", "1.web.ns-a.c.1", "9.old.ns-a.c.1"} {
		waitFor(t, n+" to be removed", func() bool { _, ok := drv.Task(taskID(n)); return !ok })
		rec.mu.Lock()
		grace, stopped := rec.graces[taskID(n)]
		rec.mu.Unlock()
		if !stopped || grace <= 0 {
			t.Errorf("%s: not stopped politely before its removal (grace %v)", n, grace)
		}
	}
	waitFor(t, "the checkpoint to forget them", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "checkpoint.json"))
		return !strings.Contains(string(b), "0.web") && !strings.Contains(string(b), "1.web") && strings.Contains(string(b), "2.web")
	})
	if _, err := os.Stat(executor.PodDir(dir, testNS, "0.web.ns-a.c.1")); !os.IsNotExist(err) {
		t.Errorf("pod directory of a deleted task group left: %v", err)
	}
	if !drv.Running(taskID("2.web.ns-a.c.1")) || len(drv.Started()) != 3 {
		t.Fatalf("the wanted task group was disturbed: started %v", drv.Started())
	}
}

// With the server unreachable, workloads keep running; statuses are delivered once it is back.
func TestServerUnreachable(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv)
	runProcessTGs(t, "0.web.ns-a.c.1", "1.web.ns-a.c.1")

	c.down()
	drv.Exit(taskID("1.web.ns-a.c.1"), 2) // happens while nobody can be told
	time.Sleep(700 * time.Millisecond)
	if !drv.Running(taskID("0.web.ns-a.c.1")) {
		t.Fatal("a workload was stopped because the server went away")
	}
	c.up()
	waitPhase(t, "1.web.ns-a.c.1", v4.StatusFailed)
	if !drv.Running(taskID("0.web.ns-a.c.1")) || len(drv.Started()) != 2 {
		t.Fatalf("workloads disturbed: started %v", drv.Started())
	}
	// The watch is back too: a new task group starts.
	runProcessTGs(t, "2.web.ns-a.c.1")
}

// The agent fails over to the next server when the first cannot be reached.
func TestFailsOverToTheNextServer(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv, func(cfg *Config) {
		cfg.ServerURLs = []string{"https://" + deadAddr(t), c.url()}
	})
	runProcessTGs(t, "0.web.ns-a.c.1")
}

// A pod of a task group the server does not have (its deletion missed) is removed: its
// status report gets a 404, and the full report lists it as unknown.
func TestUnknownTaskGroupIsRemoved(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	ra := startAgent(t, c, t.TempDir(), drv)
	runProcessTGs(t, "0.web.ns-a.c.1")
	// Run a pod the server never had (as if its deletion event were lost).
	<-ra.a.Ready()
	ghost := processTG("7.ghost.ns-a.c.1")
	ra.a.exec.Run(context.Background(), ghost)
	waitFor(t, "the ghost to be removed", func() bool {
		_, known := ra.a.exec.Status(testNS, "7.ghost.ns-a.c.1")
		_, ok := drv.Task(taskID("7.ghost.ns-a.c.1"))
		return !known && !ok
	})
	if !drv.Running(taskID("0.web.ns-a.c.1")) {
		t.Fatal("a known task group was stopped")
	}
}

func TestBadCheckpointStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{ServerURLs: []string{"https://127.0.0.1:1"}, DataDir: dir, NodeName: testNode,
		Listen: "127.0.0.1:0", Drivers: map[string]driver.Driver{"process": fake.New("process")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Fatalf("Run: %v", err)
	}
}

// fakeTask is the task the executor would have started for tg's process.
func fakeTask(tg *v4.TaskGroup) driver.Task {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	return driver.Task{ID: executor.TaskID(ns, name, "web"), Name: "web", Labels: map[string]string{
		driver.LabelTaskGroup: ns + "/" + name, driver.LabelTask: "web", driver.LabelNode: testNode}}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// stopRecorder remembers the grace of every Stop (the fake forgets it on Remove).
type stopRecorder struct {
	*fake.Driver
	mu     sync.Mutex
	graces map[string]time.Duration
}

func (r *stopRecorder) Stop(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	r.graces[id] = grace
	r.mu.Unlock()
	return r.Driver.Stop(ctx, id, grace)
}

// The full report lists as unknown a task group bound to another node: the agent removes
// its pod (status writes alone would not notice: they carry no node).
func TestFullReportRemovesOtherNodesTaskGroups(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	ra := startAgent(t, c, t.TempDir(), drv)
	other := processTG("3.web.ns-a.c.1")
	other.Spec.Node = "node-2"
	createTG(t, other)
	<-ra.a.Ready()
	ra.a.exec.Run(context.Background(), other)
	waitFor(t, "the pod to be removed after a full report", func() bool {
		_, known := ra.a.exec.Status(testNS, "3.web.ns-a.c.1")
		_, ok := drv.Task(taskID("3.web.ns-a.c.1"))
		return !known && !ok
	})
}
