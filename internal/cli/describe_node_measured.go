package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// firstSampleWait is how long describe waits for a second sample when the agent's was its
// first (no CPU rates yet): a little over the agent's sampling interval.
const firstSampleWait = 2100 * time.Millisecond

// measuredNodeUsage reads what the node uses now. An agent's first sample has no CPU
// rates: the usage is read once more after its sampling interval.
func measuredNodeUsage(ctx context.Context, c *client.Client, node string) (*v4.NodeUsage, error) {
	u, err := c.NodeUsage(ctx, node)
	if err != nil || u.WindowSeconds > 0 {
		return u, err
	}
	select {
	case <-ctx.Done():
		return u, nil
	case <-time.After(firstSampleWait):
	}
	return c.NodeUsage(ctx, node)
}

// nodeMeasured writes what the node uses, measured, against what it may allocate and
// what its task groups reserve.
func (d *describer) nodeMeasured(u *v4.NodeUsage) {
	d.section("Measured Usage", func() {
		window := "no rate yet: the agent's first sample"
		if u.WindowSeconds > 0 {
			window = "over " + strconv.FormatFloat(u.WindowSeconds, 'f', 1, 64) + "s"
		}
		d.kv("CPU", "host %s, instances %s cores (%s); %s allocatable, %s reserved",
			cores(u.Host.CPUCores), cores(u.Instances.CPUCores), window, cores(u.Allocatable.CPU), cores(u.Reserved.CPU))
		d.kv("Memory", "host %s of %s in use, instances %s; %s allocatable, %s reserved",
			inMB(u.Host.MemoryBytes), inMB(u.Host.MemoryTotalBytes), inMB(u.Instances.MemoryBytes), megabytes(u.Allocatable.MemoryMB), megabytes(u.Reserved.MemoryMB))
		measured := fmt.Sprintf("%s running, %s measured", count(u.Instances.Count, "instance"), count(u.Instances.Tasks, "task"))
		if u.Instances.Unmeasured > 0 {
			measured += fmt.Sprintf(", %d not measurable", u.Instances.Unmeasured)
		}
		d.kv("Instances", "%s", measured)
		if u.Reserved.OverheadMemoryMB > 0 || u.Reserved.OverheadCPU > 0 {
			// Each task group reserves its tasks' requests and its executor's overhead.
			d.kv("Overhead", "%s cores and %s of the reserved are the executors'",
				cores(u.Reserved.OverheadCPU), megabytes(u.Reserved.OverheadMemoryMB))
		}
		if u.Host.Error != "" {
			d.kv("Host Error", "%s", u.Host.Error)
		}
	})
}

// cores writes a CPU amount with two decimals at most ("1.25", "0.5", "2").
func cores(c float64) string { return strconv.FormatFloat(float64(int64(c*100+0.5))/100, 'f', -1, 64) }

// inMB writes bytes as megabytes does MB ("1.9GB"), so measured and reserved read alike.
func inMB(b uint64) string { return megabytes(float64(b) / (1 << 20)) }
