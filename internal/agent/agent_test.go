package agent

import (
	"context"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/store"
)

func getNode(t *testing.T) *v4.Node {
	t.Helper()
	n, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(context.Background(), "", testNode)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRegistersAndHeartbeats(t *testing.T) {
	c := newCluster(t)
	// Ports above the kernel's ephemeral range, which no other test binds: the agent's
	// report of ports other programs hold (busyports.go) has nothing to write.
	quiet := v4.PortRange{Begin: 64100, End: 64110}
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) { cfg.PortRanges = []v4.PortRange{quiet} })
	waitFor(t, "the node to register", func() bool {
		_, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(context.Background(), "", testNode)
		return err == nil
	})
	var n *v4.Node
	waitFor(t, "the agent address", func() bool { n = getNode(t); return n.Status.AgentAddress != "" })
	s := n.Spec
	if s.IP != "127.0.0.1" || s.Hostname != testNode || s.Capacity.CPU != float64(runtime.NumCPU()) ||
		s.Capacity.MemoryMB <= 0 || s.Capacity.DiskMB <= 0 || s.Allocatable.CPU >= s.Capacity.CPU ||
		s.Allocatable.MemoryMB >= s.Capacity.MemoryMB || s.Allocatable.MemoryMB <= 0 {
		t.Errorf("node spec: %+v", s)
	}
	if n.Metadata.Labels["zone"] != "z1" || s.Attributes.Text["rack"] != "r1" || len(s.PortRanges) != 1 || s.PortRanges[0] != quiet {
		t.Errorf("labels, attributes, ports: %+v %+v", n.Metadata.Labels, s)
	}
	if n.Status.Phase != v4.NodeReady || n.Status.AgentVersion != Version {
		t.Errorf("node status: %+v", n.Status)
	}
	// Heartbeats renew the node's lease; the node itself is not written again.
	first := n.Status.LastHeartbeat
	waitFor(t, "a later heartbeat", func() bool {
		last, err := testStore.LastBeat(context.Background(), testNode)
		return err == nil && last.After(first)
	})
	if got := getNode(t); got.Metadata.ResourceVersion != n.Metadata.ResourceVersion {
		t.Errorf("heartbeats wrote the node: version %s, then %s", n.Metadata.ResourceVersion, got.Metadata.ResourceVersion)
	}

	// An operator deletes the node (as DELETE /v1/nodes/{name} does): the agent registers
	// it again.
	if _, err := testStore.Delete(context.Background(), v4.KindNode, "", testNode, ""); err != nil {
		t.Fatal(err)
	}
	if err := testStore.ForgetNode(context.Background(), testNode); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node to come back", func() bool {
		_, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(context.Background(), "", testNode)
		return err == nil
	})
}

func TestRunsReportsStopsAndRemoves(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	dir := t.TempDir()
	startAgent(t, c, dir, drv)

	// Every stored phase of the task group, in order.
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := tgs().Watch(wctx, testNS, 0)
	if err != nil {
		t.Fatal(err)
	}
	createTG(t, processTG("0.web.ns-a.c.1"))
	tg := waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	st, ok := drv.Task(taskID("0.web.ns-a.c.1"))
	if !ok || len(drv.Started()) != 1 {
		t.Fatalf("driver: %v %v", ok, drv.Started())
	}
	if got := tg.Status.Tasks[0].Info.Pid; got == 0 || tg.Status.HostIP != "127.0.0.1" {
		t.Fatalf("stored status: %+v", tg.Status)
	}
	if st.Labels["berth.node"] != testNode {
		t.Errorf("task labels: %v", st.Labels)
	}
	var phases []string
	for len(phases) == 0 || phases[len(phases)-1] != v4.StatusRunning {
		select {
		case ev := <-events:
			if p := ev.Object.Status.Phase; p != "" && (len(phases) == 0 || phases[len(phases)-1] != p) {
				phases = append(phases, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("phases so far %v", phases)
		}
	}
	// Reports may be coalesced, never reordered.
	order := []string{v4.StatusStaging, v4.StatusStarting, v4.StatusRunning}
	i := 0
	for _, p := range phases {
		j := slices.Index(order[i:], p)
		if j < 0 {
			t.Fatalf("phases out of order: %v", phases)
		}
		i += j
	}
	ckpt, err := os.ReadFile(dir + "/checkpoint.json")
	if err != nil || !containsAll(string(ckpt), `"ns-a/0.web.ns-a.c.1"`, `"killGracePeriod": 1`) {
		t.Fatalf("checkpoint: %s %v", ckpt, err)
	}

	// Logs through the server's proxy and the agent's endpoint.
	drv.SetLogs(taskID("0.web.ns-a.c.1"), "2026-11-29T00:00:00Z stdout F hello from web\n2026-11-29T00:00:01Z stderr F oops\n")
	cl := c.client()
	for _, lc := range []struct {
		opts client.LogOptions
		want string
	}{
		{client.LogOptions{}, "hello from web\noops\n"},
		{client.LogOptions{Stream: v4.LogStreamStdout}, "hello from web\n"},
		{client.LogOptions{Stream: v4.LogStreamStderr, Timestamps: true}, "2026-11-29T00:00:01Z oops\n"},
	} {
		rc, err := cl.Logs(context.Background(), testNS, "0.web.ns-a.c.1", lc.opts)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != lc.want {
			t.Fatalf("logs %+v: %q, want %q", lc.opts, b, lc.want)
		}
	}
	if err := cl.Action(context.Background(), testNS, "0.web.ns-a.c.1", "web", v4.ActionReload); err != nil {
		t.Fatal(err)
	}
	if err := cl.Signal(context.Background(), testNS, "0.web.ns-a.c.1", "", "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if got := drv.Actions(taskID("0.web.ns-a.c.1")); !slices.Equal(got, []string{"reload", "signal 1"}) {
		t.Fatalf("actions: %v", got)
	}
	if err := cl.Signal(context.Background(), testNS, "0.web.ns-a.c.1", "", "SIGNOPE"); client.StatusOf(err) != 400 {
		t.Fatalf("a bad signal: %v", err)
	}
	if _, err := cl.Logs(context.Background(), testNS, "0.web.ns-a.c.1", client.LogOptions{Task: "nope"}); client.StatusOf(err) != 404 {
		t.Fatalf("logs of an unknown task: %v", err)
	}

	// Desired Stopped: a deliberate kill, which ends Finish.
	editTG(t, "0.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusFinish)
	if _, stopped := drv.Stopped(taskID("0.web.ns-a.c.1")); !stopped {
		t.Fatal("task not stopped")
	}

	// Deleted: the task and the pod's directory are removed, and the checkpoint forgets it.
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, testNS, "0.web.ns-a.c.1", ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to be removed", func() bool { _, ok := drv.Task(taskID("0.web.ns-a.c.1")); return !ok })
	waitFor(t, "the checkpoint to forget it", func() bool {
		b, _ := os.ReadFile(dir + "/checkpoint.json")
		return !containsAll(string(b), "0.web.ns-a.c.1")
	})
	if _, err := os.Stat(executor.PodDir(dir, testNS, "0.web.ns-a.c.1")); !os.IsNotExist(err) {
		t.Fatalf("pod directory left: %v", err)
	}
}

func TestDoesNotStartEndedOrStoppedTaskGroups(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	ended := processTG("0.web.ns-a.c.1")
	ended.Status.Phase = v4.StatusFailed
	createTG(t, ended)
	stopped := processTG("1.web.ns-a.c.1")
	stopped.Spec.Desired = v4.DesiredStopped
	stopped.Status.Phase = v4.StatusRunning // it ran somewhere before; nothing runs here now
	createTG(t, stopped)
	startAgent(t, c, t.TempDir(), drv)
	waitPhase(t, "1.web.ns-a.c.1", v4.StatusFinish)
	runProcessTGs(t, "2.web.ns-a.c.1")
	if got := drv.Started(); !slices.Equal(got, []string{taskID("2.web.ns-a.c.1")}) {
		t.Fatalf("started %v, want only the wanted one", got)
	}
}

func TestTaskExitReportsFailure(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv)
	runProcessTGs(t, "0.web.ns-a.c.1")
	drv.Exit(taskID("0.web.ns-a.c.1"), 3)
	tg := waitPhase(t, "0.web.ns-a.c.1", v4.StatusFailed)
	if tg.Status.Tasks[0].Info.ExitCode != 3 {
		t.Fatalf("exit code: %+v", tg.Status.Tasks[0].Info)
	}
	// Ended is final: the agent does not start it again.
	time.Sleep(300 * time.Millisecond)
	if n := len(drv.Started()); n != 1 {
		t.Fatalf("started %d times", n)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A task group the server marked Lost (its agent was unreachable for a TTL) that still
// runs here is reported Running again at once: its status did not change here, so no
// status change and no periodic report of changes would carry it.
func TestLostTaskGroupStillRunningIsReportedAgain(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	// No periodic report within the test: only the agent's reaction can bring it back.
	startAgent(t, c, t.TempDir(), drv, func(cfg *Config) { cfg.ReportInterval = time.Hour })
	runProcessTGs(t, "0.web.ns-a.c.1")
	editTG(t, "0.web.ns-a.c.1", func(tg *v4.TaskGroup) {
		tg.Status.Phase, tg.Status.Message = v4.StatusLost, "node is lost (the test)"
	})
	tg := waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	if len(drv.Started()) != 1 {
		t.Fatalf("the task was started again: %v", drv.Started())
	}
	if tg.Status.Message == "node is lost (the test)" {
		t.Fatalf("the Lost status stayed: %+v", tg.Status)
	}
}
