package process

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

var (
	clusterA = "sha256:" + strings.Repeat("a", 64)
	clusterB = "sha256:" + strings.Repeat("b", 64)
)

// sleepTask is a task of ID id labelled for node (as the executor labels it).
func sleepTask(t *testing.T, id, node string) *driver.Task {
	t.Helper()
	task := testTask(t, id, &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	task.Labels[driver.LabelNode] = node
	task.Labels[driver.LabelCluster] = "forged" // a workload's own label never decides
	return task
}

// Two clusters' agents on one machine, with the same node name and a task of the same
// ID: each runs its own in a cgroup of its own, and neither lists, stops or removes the
// other's. Before tasks carried their cluster, the second start emptied the cgroup the
// first task ran in.
func TestOtherClustersTasksAreLeftAlone(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	a := newTestDriverWith(t, Config{Owner: driver.Owner{Cluster: clusterA, Node: "n1"}})
	b := newTestDriverWith(t, Config{Owner: driver.Owner{Cluster: clusterB, Node: "n1"}})
	const id = "ns.owner.sleep"
	stA := mustStart(t, a, sleepTask(t, id, "n1"))
	stB := mustStart(t, b, sleepTask(t, id, "n1"))
	if !alive(stA.Info.Pid, 0) || !alive(stB.Info.Pid, 0) {
		t.Fatalf("both tasks must run: a pid %d, b pid %d", stA.Info.Pid, stB.Info.Pid)
	}
	if stA.Labels[driver.LabelCluster] != clusterA || stB.Labels[driver.LabelCluster] != clusterB {
		t.Errorf("cluster labels: a %q, b %q", stA.Labels[driver.LabelCluster], stB.Labels[driver.LabelCluster])
	}
	if a.cgroupPath(id) == b.cgroupPath(id) || !strings.HasSuffix(a.cgroupPath(id), "/aaaaaaaaaaaa_"+id) {
		t.Errorf("cgroups: a %s, b %s", a.cgroupPath(id), b.cgroupPath(id))
	}

	// A data dir taken over by an agent of another cluster (the machine joined another
	// cluster): the first cluster's task is not the new agent's.
	other := newTestDriverWith(t, Config{DataDir: a.dataDir, Owner: driver.Owner{Cluster: clusterB, Node: "n1"}})
	ctx := context.Background()
	if list, err := other.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("another cluster lists %+v (%v), want nothing", list, err)
	}
	for what, err := range map[string]error{
		"inspect": func() error { _, err := other.Inspect(ctx, id); return err }(),
		"stop":    other.Stop(ctx, id, time.Millisecond),
		"remove":  other.Remove(ctx, id),
	} {
		if !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("another cluster's %s: %v, want not found", what, err)
		}
	}
	if _, err := other.Start(ctx, sleepTask(t, id, "n1")); err == nil {
		t.Error("another cluster started a task over the first one's state")
	}

	// Stopping and removing one cluster's task leaves the other's running.
	if err := a.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if alive(stA.Info.Pid, 0) || !alive(stB.Info.Pid, 0) {
		t.Fatalf("after a's stop: a alive %v, b alive %v; want only b", alive(stA.Info.Pid, 0), alive(stB.Info.Pid, 0))
	}
	if st, err := b.Inspect(ctx, id); err != nil || !st.Running || st.Info.Pid != stB.Info.Pid {
		t.Errorf("b's task after a's removal: %+v, %v", st, err)
	}
}

// A task started before tasks carried their cluster is adopted by the agent of its node
// (whatever its cluster), and by no other node's.
func TestLegacyTaskIsTheNodes(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	old := newTestDriverWith(t, Config{}) // an agent of before: no owner, untagged cgroups
	task := testTask(t, "ns.legacy.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	task.Labels[driver.LabelNode] = "n1"
	st := mustStart(t, old, task)
	if _, ok := st.Labels[driver.LabelCluster]; ok {
		t.Fatalf("an agent without a cluster labelled its task: %v", st.Labels)
	}
	ctx := context.Background()
	stranger := newTestDriverWith(t, Config{DataDir: old.dataDir, Owner: driver.Owner{Cluster: clusterB, Node: "n2"}})
	if list, _ := stranger.List(ctx); len(list) != 0 {
		t.Errorf("another node lists the legacy task: %+v", list)
	}
	mine := newTestDriverWith(t, Config{DataDir: old.dataDir, Owner: driver.Owner{Cluster: clusterA, Node: "n1"}})
	list, err := mine.List(ctx)
	if err != nil || len(list) != 1 || list[0].Info.Pid != st.Info.Pid || !list[0].Running {
		t.Fatalf("its node's agent lists %+v (%v), want the running legacy task", list, err)
	}
	if err := mine.Stop(ctx, task.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if alive(st.Info.Pid, 0) {
		t.Error("the adopted legacy task survived its Stop")
	}
}
