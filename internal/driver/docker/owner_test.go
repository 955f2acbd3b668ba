package docker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

var (
	clusterA = "sha256:" + strings.Repeat("a", 64)
	clusterB = "sha256:" + strings.Repeat("b", 64)
)

func newOwnedDriver(t *testing.T, owner driver.Owner) *Driver {
	t.Helper()
	d, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// listed returns the state d lists for task id, if any.
func listed(t *testing.T, d *Driver, id string) (driver.State, bool) {
	t.Helper()
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == id {
			return s, true
		}
	}
	return driver.State{}, false
}

// Two clusters' agents share one Docker daemon, with the same node name and a task of the
// same ID: each has its own container, named and labelled after its cluster, and
// neither lists, inspects, stops or removes the other's.
func TestOtherClustersContainersAreLeftAlone(t *testing.T) {
	needDocker(t)
	t.Parallel()
	a := newOwnedDriver(t, driver.Owner{Cluster: clusterA, Node: "n1"})
	b := newOwnedDriver(t, driver.Owner{Cluster: clusterB, Node: "n1"})
	ta := newTask(t, a, "web", imgPlain, "/bin/sleep", "300")
	tb := newTask(t, b, "web", imgPlain, "/bin/sleep", "300")
	for _, task := range []*driver.Task{ta, tb} {
		task.Labels[driver.LabelNode] = "n1"
		task.Labels[driver.LabelCluster] = "forged" // a workload's own label never decides
	}
	id := ta.ID
	sa, sb := mustStart(t, a, ta), mustStart(t, b, tb)
	if sa.Info.ID == sb.Info.ID || !strings.HasPrefix(sa.Info.Name, "berth-aaaaaaaaaaaa_") || !strings.HasPrefix(sb.Info.Name, "berth-bbbbbbbbbbbb_") {
		t.Fatalf("containers: a %s %s, b %s %s", sa.Info.Name, sa.Info.ID, sb.Info.Name, sb.Info.ID)
	}
	if sa.Labels[driver.LabelCluster] != clusterA || sb.Labels[driver.LabelCluster] != clusterB {
		t.Errorf("cluster labels: a %q, b %q", sa.Labels[driver.LabelCluster], sb.Labels[driver.LabelCluster])
	}
	if s, ok := listed(t, a, id); !ok || s.Info.ID != sa.Info.ID {
		t.Errorf("a lists %+v (%v), want its own container only", s.Info, ok)
	}

	ctx := ctxT(t, 30*time.Second)
	if err := b.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Inspect(ctx, id); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("b's removed task: %v", err)
	}
	if st, err := a.Inspect(ctx, id); err != nil || !st.Running || st.Info.ID != sa.Info.ID {
		t.Fatalf("a's container after b's stop and removal: %+v, %v", st.Info, err)
	}
	if c := rawInspect(t, "aaaaaaaaaaaa_"+id); !c.State.Running {
		t.Errorf("a's container: %s", stateString(c.State))
	}
}

// A container started before containers carried their cluster (untagged name, no cluster
// label) is the agent's of its node: found, stopped and removed through the untagged
// name; another node's agent neither lists nor touches it.
func TestLegacyContainerIsTheNodes(t *testing.T) {
	needDocker(t)
	t.Parallel()
	old := newDriver(t) // an agent of before: no owner
	task := newTask(t, old, "legacy", imgPlain, "/bin/sleep", "300")
	task.Labels[driver.LabelNode] = "n1"
	st := mustStart(t, old, task)
	if st.Info.Name != containerName(task.ID) || st.Labels[driver.LabelCluster] != "" {
		t.Fatalf("an agent without a cluster: name %s, labels %v", st.Info.Name, st.Labels)
	}
	ctx := ctxT(t, 30*time.Second)
	stranger := newOwnedDriver(t, driver.Owner{Cluster: clusterB, Node: "n2"})
	if _, ok := listed(t, stranger, task.ID); ok {
		t.Error("another node's agent lists the legacy container")
	}
	for what, err := range map[string]error{
		"inspect": func() error { _, err := stranger.Inspect(ctx, task.ID); return err }(),
		"stop":    stranger.Stop(ctx, task.ID, time.Second),
		"remove":  stranger.Remove(ctx, task.ID),
	} {
		if !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("another node's %s: %v, want not found", what, err)
		}
	}
	if c := rawInspect(t, task.ID); !c.State.Running {
		t.Fatalf("another node's agent stopped the legacy container: %s", stateString(c.State))
	}

	mine := newOwnedDriver(t, driver.Owner{Cluster: clusterA, Node: "n1"})
	if s, ok := listed(t, mine, task.ID); !ok || s.Info.ID != st.Info.ID || !s.Running {
		t.Fatalf("its node's agent lists %+v (%v), want the running legacy container", s.Info, ok)
	}
	if _, err := mine.Start(ctx, task); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second container of the legacy task: %v", err)
	}
	if err := mine.Stop(ctx, task.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := mine.Remove(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rawContainer(ctx, st.Info.ID); err == nil {
		t.Error("the legacy container is still there after its node's agent removed it")
	}
}
