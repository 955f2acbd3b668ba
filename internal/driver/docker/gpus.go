package docker

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/gpus"
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
	if t.Setup.IPCHost {
		hc.IpcMode = container.IPCModeHost
	}
	if d.gpuToolkit() {
		if dir := t.Setup.GPUDriverDir; dir != "" { // a driver of the sharing mode's, over whatever the toolkit mounts
			hc.Mounts = append(hc.Mounts, bindMount(gpus.DriverDirMount(dir)))
			setLibraryPath(cfg)
		}
		uuids := make([]string, len(t.GPUs))
		for i, g := range t.GPUs {
			uuids[i] = g.UUID
		}
		hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{
			Driver: "nvidia", DeviceIDs: uuids, Capabilities: [][]string{{"gpu", "compute", "utility"}},
		})
		return nil
	}
	needs, err := d.gpuFiles.For(t)
	if err != nil {
		return err
	}
	for _, dev := range needs.Devices {
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: dev.HostPath, PathInContainer: dev.ContainerPath, CgroupPermissions: dev.Permissions})
	}
	for _, m := range needs.Mounts {
		hc.Mounts = append(hc.Mounts, bindMount(m))
	}
	setLibraryPath(cfg)
	return nil
}

func bindMount(m driver.Mount) mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: m.HostPath, Target: m.ContainerPath, ReadOnly: m.ReadOnly}
}

// setLibraryPath points the loader at the driver's libraries unless the task's env sets
// its own path (gpus.LibraryPath).
func setLibraryPath(cfg *container.Config) {
	if v, add := gpus.LibraryPath(cfg.Env); add {
		cfg.Env = append(cfg.Env, v)
	}
}

// gpuToolkit reports whether the NVIDIA container toolkit's hook is installed (looked up
// once).
func (d *Driver) gpuToolkit() bool {
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.toolkit == nil {
		_, err := exec.LookPath(toolkitHook)
		found := err == nil && d.gpuFiles.Root() == "/"
		d.toolkit = &found
		if found {
			d.log.Info("GPUs go to containers through the NVIDIA container toolkit")
		}
	}
	return *d.toolkit
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
