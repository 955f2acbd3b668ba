package docker

import (
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/berthhq/berth/internal/driver"
)

// An rshared volume (a CSI plugin's view of the data dir) keeps its propagation; a plain
// one has none (Docker's default, rprivate).
func TestVolumePropagation(t *testing.T) {
	dir := t.TempDir()
	ms, err := volumeMounts([]driver.Mount{{HostPath: dir, ContainerPath: "/plain"},
		{HostPath: dir, ContainerPath: dir, Propagation: driver.PropagationRShared}})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].BindOptions != nil || ms[1].BindOptions == nil || ms[1].BindOptions.Propagation != mount.PropagationRShared {
		t.Errorf("mounts %+v", ms)
	}
}
