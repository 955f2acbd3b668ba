package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"syscall"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
)

// maxStatsBody bounds one stats answer (a few KiB; a daemon that sends more is cut off).
const maxStatsBody = 1 << 20

// Usage is one sample of the container's statistics from the daemon (one-shot: it does
// not wait a second for a previous sample): CPU time used, memory held less the inactive
// page cache (as docker stats shows it) and the memory limit (0 when the limit is the
// host's memory, i.e. none).
func (d *Driver) Usage(ctx context.Context, id string) (driver.Usage, error) {
	if err := checkID(id); err != nil {
		return driver.Usage{}, err
	}
	var st container.StatsResponse
	err := d.withContainer(ctx, id, func(ref string) error {
		res, err := d.cli.ContainerStats(ctx, ref, client.ContainerStatsOptions{})
		if err != nil {
			return err
		}
		defer res.Body.Close()
		return json.NewDecoder(io.LimitReader(res.Body, maxStatsBody)).Decode(&st)
	})
	if err != nil {
		return driver.Usage{}, d.wrap(err, "usage of task %s", id)
	}
	if st.Read.IsZero() {
		return driver.Usage{}, fmt.Errorf("usage of task %s: the daemon sent no sample (the container is not running)", id)
	}
	m := st.MemoryStats
	inactive := m.Stats["inactive_file"] // cgroup v2
	if v, ok := m.Stats["total_inactive_file"]; ok {
		inactive = v // cgroup v1
	}
	u := driver.Usage{CPUSeconds: float64(st.CPUStats.CPUUsage.TotalUsage) / 1e9,
		MemoryBytes: driver.MemoryInUse(m.Usage, inactive), MemoryLimitBytes: m.Limit}
	if total := hostMemory(); total > 0 && m.Limit >= total {
		u.MemoryLimitBytes = 0 // no limit of its own: the daemon reports the host's memory
	}
	return u, nil
}

// hostMemory is the node's memory in bytes (0 when unknown).
func hostMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
