package containerd

import (
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/gpus"
)

// A container's cards (docs/gpus.md, "On the node") are given as the Docker driver gives
// them without the NVIDIA container toolkit (internal/driver/gpus): the cards' and the
// driver's device nodes, the driver's files (or a sharing mode's driver directory)
// read-only under /usr/local/nvidia and the loader's path to them. The toolkit's hook is
// not used: the spec alone says what the container gets.

// deviceOpts give the container its devices (Setup.Devices, device parameters), its
// cards, and the host's IPC namespace when the executor asks for it (an MPS client's).
func (d *Driver) deviceOpts(t *driver.Task, devices []driver.Device) ([]oci.SpecOpts, error) {
	if err := noCDI(t.Setup.CDIDevices); err != nil {
		return nil, err
	}
	var opts []oci.SpecOpts
	if t.Setup.IPCHost {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace), withHostShm)
	}
	needs, err := d.gpuFiles.For(t)
	if err != nil {
		return nil, err
	}
	devices = append(append([]driver.Device(nil), t.Setup.Devices...), devices...)
	opts = append(opts, withDevices(append(devices, needs.Devices...)))
	if len(t.GPUs) == 0 {
		return opts, nil
	}
	mounts := make([]specs.Mount, len(needs.Mounts))
	for i, m := range needs.Mounts {
		mounts[i] = bindMount(m.HostPath, m.ContainerPath, m.ReadOnly)
	}
	opts = append(opts, oci.WithMounts(mounts))
	if v, add := gpus.LibraryPath(t.Env); add {
		opts = append(opts, oci.WithEnv([]string{v}))
	}
	return opts, nil
}
