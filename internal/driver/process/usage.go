package process

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berthhq/berth/internal/driver"
)

// Usage reads the task's CPU time and memory from its cgroup (v2: cpu.stat, memory.current
// and memory.max; v1: cpuacct.usage, memory.usage_in_bytes and memory.limit_in_bytes),
// the inactive page cache taken off the memory. A task without a cgroup (an agent not
// running as root) cannot be measured.
func (d *Driver) Usage(_ context.Context, id string) (driver.Usage, error) {
	st, err := d.snapshot(id)
	if err != nil {
		return driver.Usage{}, err
	}
	cg := d.loadCgroup(st)
	if cg == nil {
		return driver.Usage{}, fmt.Errorf("task %s has no cgroup to measure (the agent does not run as root)", id)
	}
	u, err := cgroupUsage(cg)
	if err != nil {
		return driver.Usage{}, fmt.Errorf("task %s: %w", id, err)
	}
	return u, nil
}

// cgroupUsage reads what a task's cgroup accounts.
func cgroupUsage(cg taskCgroup) (driver.Usage, error) {
	var u driver.Usage
	if stat := readKV(filepath.Join(cg.Dir("cpu"), "cpu.stat")); hasKey(stat, "usage_usec") { // v2
		mem, err := readUint(filepath.Join(cg.Dir("memory"), "memory.current"))
		if err != nil {
			return u, err
		}
		limit, _ := readUint(filepath.Join(cg.Dir("memory"), "memory.max")) // "max": none
		u.CPUSeconds = float64(stat["usage_usec"]) / 1e6
		u.MemoryBytes = driver.MemoryInUse(mem, readKV(filepath.Join(cg.Dir("memory"), "memory.stat"))["inactive_file"])
		u.MemoryLimitBytes = limit
		return u, nil
	}
	cpu, err := readUint(filepath.Join(cg.Dir("cpuacct"), "cpuacct.usage"))
	if err != nil {
		return u, err
	}
	mem, err := readUint(filepath.Join(cg.Dir("memory"), "memory.usage_in_bytes"))
	if err != nil {
		return u, err
	}
	limit, _ := readUint(filepath.Join(cg.Dir("memory"), "memory.limit_in_bytes"))
	if limit >= math.MaxInt64/4096*4096 { // v1's "no limit" is the largest page multiple
		limit = 0
	}
	u.CPUSeconds = float64(cpu) / 1e9
	u.MemoryBytes = driver.MemoryInUse(mem, readKV(filepath.Join(cg.Dir("memory"), "memory.stat"))["total_inactive_file"])
	u.MemoryLimitBytes = limit
	return u, nil
}

func hasKey(m map[string]uint64, k string) bool {
	_, ok := m[k]
	return ok
}

// readUint reads a cgroup file holding one number ("max" reads as 0).
func readUint(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return n, nil
}
