// Package gpus says what a container needs to use its cards without the NVIDIA
// container toolkit (docs/gpus.md, "On the node"), for every container driver: the
// cards' and the NVIDIA driver's device nodes, the driver's libraries and tools mounted
// read-only under /usr/local/nvidia (or a sharing mode's own driver directory there),
// and the loader's path to them. The Docker and containerd drivers differ only in how
// they hand these to their runtime.
package gpus

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
)

// Files finds the NVIDIA driver's files under a root ("/" on a node; a test's tree)
// once they are all there: a node whose driver is installed later finds them then.
type Files struct {
	root string
	mu   sync.Mutex
	hf   *gpu.HostFiles
}

// NewFiles looks for the driver's files under root ("/" when empty).
func NewFiles(root string) *Files {
	if root == "" {
		root = "/"
	}
	return &Files{root: root}
}

// Root is where the files are looked for.
func (f *Files) Root() string { return f.root }

// Host returns the driver's files on the host.
func (f *Files) Host() (gpu.HostFiles, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hf != nil {
		return *f.hf, nil
	}
	hf, err := gpu.FindHostFiles(f.root)
	if err != nil {
		return hf, err
	}
	f.hf = &hf
	return hf, nil
}

// Needs are what a task's cards need: device nodes (rwm, at /dev/<name>) and
// read-only mounts.
type Needs struct {
	Devices []driver.Device
	Mounts  []driver.Mount
}

// For returns what task t's cards need without the toolkit: the sharing mode's driver
// directory (Setup.GPUDriverDir) at /usr/local/nvidia in place of the host driver's
// files, else the host driver's libraries and tools under it; the driver's control
// nodes and each card's /dev/nvidia<minor> either way. A task without cards needs
// nothing; a node without the driver fails with the cards' UUIDs.
func (f *Files) For(t *driver.Task) (Needs, error) {
	var n Needs
	if len(t.GPUs) == 0 {
		return n, nil
	}
	if dir := t.Setup.GPUDriverDir; dir != "" {
		n.Mounts = append(n.Mounts, DriverDirMount(dir))
	}
	hf, err := f.Host()
	if err != nil {
		uuids := make([]string, len(t.GPUs))
		for i, g := range t.GPUs {
			uuids[i] = g.UUID
		}
		return n, fmt.Errorf("GPUs %s: %w", strings.Join(uuids, ","), err)
	}
	if t.Setup.GPUDriverDir != "" {
		hf.Libraries, hf.Binaries = nil, nil
	}
	nodes := slices.Clone(hf.ControlDevices)
	for _, g := range t.GPUs {
		nodes = append(nodes, gpu.CardDevice(f.root, g.Minor))
	}
	for _, dev := range nodes {
		n.Devices = append(n.Devices, driver.Device{HostPath: dev, ContainerPath: path.Join("/dev", filepath.Base(dev)), Permissions: "rwm"})
	}
	for _, lib := range hf.Libraries {
		n.Mounts = append(n.Mounts, driver.Mount{HostPath: lib, ContainerPath: path.Join(gpu.ContainerLibDir, filepath.Base(lib)), ReadOnly: true})
	}
	for _, bin := range hf.Binaries {
		n.Mounts = append(n.Mounts, driver.Mount{HostPath: bin, ContainerPath: path.Join(gpu.ContainerBinDir, filepath.Base(bin)), ReadOnly: true})
	}
	return n, nil
}

// DriverDirMount mounts a sharing mode's driver directory read-only at /usr/local/nvidia.
func DriverDirMount(dir string) driver.Mount {
	return driver.Mount{HostPath: dir, ContainerPath: gpu.ContainerDriverDir, ReadOnly: true}
}

// LibraryPath is the loader's path to the driver's libraries, to add to env unless env
// sets its own (add false): CUDA images set this very value; an image without it finds
// the driver so.
func LibraryPath(env []string) (v string, add bool) {
	has := slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "LD_LIBRARY_PATH=") })
	return "LD_LIBRARY_PATH=" + gpu.ContainerLibDir, !has
}
