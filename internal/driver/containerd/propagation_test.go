package containerd

import (
	"context"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/berthhq/berth/internal/driver"
)

// An rshared volume (a CSI plugin's view of the data dir) is bound with rshared and the
// container's root is made shared, or its mounts would not propagate to the node.
func TestSharedPropagation(t *testing.T) {
	d := &Driver{filesDir: t.TempDir()}
	dir := t.TempDir()
	tk := &driver.Task{ID: "ns.tg.t", Setup: &driver.ContainerSetup{Volumes: []driver.Mount{
		{HostPath: dir, ContainerPath: "/plain"},
		{HostPath: dir, ContainerPath: dir, Propagation: driver.PropagationRShared},
	}}}
	ms, err := d.mounts(tk)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ms[0].Options, "rshared") || !slices.Contains(ms[1].Options, "rshared") {
		t.Fatalf("options %v and %v", ms[0].Options, ms[1].Options)
	}
	if sharedMounts(ms[:1]) || !sharedMounts(ms) {
		t.Error("sharedMounts")
	}
	s := &oci.Spec{}
	if err := withSharedRootfs(context.Background(), nil, nil, s); err != nil || s.Linux.RootfsPropagation != "rshared" {
		t.Errorf("rootfs propagation %+v %v", s.Linux, err)
	}
}
