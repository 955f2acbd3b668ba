package docker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/berthhq/berth/internal/driver"
)

// A CNI pod of one cluster is not another cluster's to list or tear down, even with the
// same node name, nor is its network state when another cluster's agent takes over the
// data dir.
func TestOtherClustersPodNetworksAreLeftAlone(t *testing.T) {
	base, leases := cniDriver(t)
	owned := func(dataDir string, owner driver.Owner) *Driver {
		d, err := New(Config{DataDir: dataDir, CNIConfDir: base.cniConfDir, Owner: owner, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a := owned(t.TempDir(), driver.Owner{Cluster: clusterA, Node: "n1"})
	b := owned(t.TempDir(), driver.Owner{Cluster: clusterB, Node: "n1"})
	ctx := ctxT(t, 60*time.Second)
	pod := "test." + runTag + ".cniowner"
	t.Cleanup(func() { a.TeardownPod(context.Background(), pod) })
	sandbox, ip, err := a.SetupPod(ctx, pod, map[string]string{testLabel: runTag, driver.LabelNode: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rawContainer(ctx, sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "/berth-aaaaaaaaaaaa_pod-"+pod || c.Config.Labels[driver.LabelCluster] != clusterA {
		t.Errorf("sandbox %s labelled %v", c.Name, c.Config.Labels)
	}
	if p, err := a.loadPod(pod); err != nil || p.Cluster != clusterA {
		t.Errorf("pod state: %+v, %v", p, err)
	}

	if ids, err := b.PodIDs(ctx); err != nil || slices.Contains(ids, pod) {
		t.Errorf("another cluster lists the pod: %v %v", ids, err)
	}
	if err := b.TeardownPod(ctx, pod); err != nil {
		t.Fatalf("another cluster's teardown of a pod it does not have: %v", err)
	}
	// Another cluster's agent on the data dir: the state is not its own.
	takeover := owned(a.dataDir, driver.Owner{Cluster: clusterB, Node: "n1"})
	if ids, _ := takeover.PodIDs(ctx); slices.Contains(ids, pod) {
		t.Errorf("another cluster on the data dir lists the pod: %v", ids)
	}
	if err := takeover.TeardownPod(ctx, pod); !errors.Is(err, errForeignPod) {
		t.Errorf("another cluster on the data dir tears the pod down: %v", err)
	}
	if c, err := rawContainer(ctx, sandbox); err != nil || !c.State.Running || !leased(leases, ip) {
		t.Fatalf("the pod after the other cluster's teardowns: %v, leased %v", err, leased(leases, ip))
	}

	if ids, err := a.PodIDs(ctx); err != nil || !slices.Contains(ids, pod) {
		t.Errorf("its cluster does not list the pod: %v %v", ids, err)
	}
	if err := a.TeardownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if leased(leases, ip) {
		t.Errorf("IP %s still leased after its cluster's teardown", ip)
	}
	if _, err := rawContainer(ctx, sandbox); !cerrdefs.IsNotFound(err) {
		t.Errorf("sandbox left after its cluster's teardown: %v", err)
	}
}
