package docker

import (
	"context"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
)

// A container's cards (docs/gpus.md, "On the node"). With the NVIDIA container toolkit
// installed, Docker's own device request gives them (as `docker run --gpus`), and the
// toolkit's hook mounts the driver. Without it, the driver does what the hook would: the
// cards' device nodes and the driver's control nodes go in as devices, the driver's
// libraries and tools are bind-mounted read-only under /usr/local/nvidia.

// toolkitHook is the NVIDIA container toolkit's prestart hook: Docker's "nvidia" device
// driver needs it.
const toolkitHook = "nvidia-container-runtime-hook"

// applyGPUs gives the container its cards.
func (d *Driver) applyGPUs(t *driver.Task, cfg *container.Config, hc *container.HostConfig) error {
	if len(t.GPUs) == 0 {
		return nil
	}
	uuids := make([]string, len(t.GPUs))
	for i, g := range t.GPUs {
		uuids[i] = g.UUID
	}
	if t.Setup.IPCHost {
		hc.IpcMode = container.IPCModeHost
	}
	if t.Setup.GPUDriverDir != "" { // a driver of the sharing mode's, over whatever the toolkit mounts
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: t.Setup.GPUDriverDir, Target: gpu.ContainerDriverDir, ReadOnly: true})
		setLibraryPath(cfg)
	}
	if d.gpuToolkit() {
		hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{
			Driver: "nvidia", DeviceIDs: uuids, Capabilities: [][]string{{"gpu", "compute", "utility"}},
		})
		return nil
	}
	hf, err := d.gpuHostFiles()
	if err != nil {
		return fmt.Errorf("GPUs %s: %w", strings.Join(uuids, ","), err)
	}
	if t.Setup.GPUDriverDir != "" {
		hf.Libraries, hf.Binaries = nil, nil
	}
	devices := slices.Clone(hf.ControlDevices)
	for _, g := range t.GPUs {
		devices = append(devices, gpu.CardDevice(d.gpuRoot, g.Minor))
	}
	for _, dev := range devices {
		hc.Devices = append(hc.Devices, container.DeviceMapping{
			PathOnHost: dev, PathInContainer: path.Join("/dev", filepath.Base(dev)), CgroupPermissions: "rwm",
		})
	}
	for _, f := range hf.Libraries {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: f, Target: path.Join(gpu.ContainerLibDir, filepath.Base(f)), ReadOnly: true})
	}
	for _, f := range hf.Binaries {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: f, Target: path.Join(gpu.ContainerBinDir, filepath.Base(f)), ReadOnly: true})
	}
	setLibraryPath(cfg)
	return nil
}

// setLibraryPath points the loader at the driver's libraries unless the task's env sets
// its own path: CUDA images set this very value; an image without it finds the driver so.
func setLibraryPath(cfg *container.Config) {
	if !slices.ContainsFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, "LD_LIBRARY_PATH=") }) {
		cfg.Env = append(cfg.Env, "LD_LIBRARY_PATH="+gpu.ContainerLibDir)
	}
}

// gpuToolkit reports whether the NVIDIA container toolkit's hook is installed (looked up
// once).
func (d *Driver) gpuToolkit() bool {
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.toolkit == nil {
		_, err := exec.LookPath(toolkitHook)
		found := err == nil && d.gpuRoot == "/"
		d.toolkit = &found
		if found {
			d.log.Info("GPUs go to containers through the NVIDIA container toolkit")
		}
	}
	return *d.toolkit
}

// gpuHostFiles finds the driver's files, once they are all there (a node whose driver is
// installed later finds them then).
func (d *Driver) gpuHostFiles() (gpu.HostFiles, error) {
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.hostFiles != nil {
		return *d.hostFiles, nil
	}
	hf, err := gpu.FindHostFiles(d.gpuRoot)
	if err != nil {
		return hf, err
	}
	d.hostFiles = &hf
	return hf, nil
}

// PIDs returns the host PIDs of the container's processes (vcuda's pids.config).
func (d *Driver) PIDs(ctx context.Context, id string) ([]int, error) {
	top, err := d.cli.ContainerTop(ctx, id, client.ContainerTopOptions{})
	if err != nil {
		return nil, d.wrap(err, "processes of %s", id)
	}
	col := slices.Index(top.Titles, "PID")
	if col < 0 {
		return nil, fmt.Errorf("processes of %s: no PID column in %v", id, top.Titles)
	}
	pids := make([]int, 0, len(top.Processes))
	for _, p := range top.Processes {
		if col < len(p) {
			if pid, err := strconv.Atoi(p[col]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// applyDevices gives the container the device nodes and CDI devices of its device
// plugins' allocations.
func applyDevices(t *driver.Task, hc *container.HostConfig) {
	for _, dv := range t.Setup.Devices {
		perms := dv.Permissions
		if perms == "" {
			perms = "rwm"
		}
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: dv.HostPath, PathInContainer: dv.ContainerPath, CgroupPermissions: perms})
	}
	if len(t.Setup.CDIDevices) > 0 {
		hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{Driver: "cdi", DeviceIDs: t.Setup.CDIDevices})
	}
}
