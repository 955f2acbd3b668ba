package driver

import "context"

// Usage is what one task uses now, as its runtime measures it (the cgroup the kernel
// accounts it in).
type Usage struct {
	// CPUSeconds is the CPU time (user and system) the task has used since it started: a
	// counter, whose rate is the cores it uses.
	CPUSeconds float64
	// MemoryBytes is the memory the task holds now, less the page cache the kernel would
	// take back first (inactive files), as docker stats and the kubelet count it.
	MemoryBytes uint64
	// MemoryLimitBytes is the task's memory limit; 0 for none.
	MemoryLimitBytes uint64
}

// UsageReader is implemented by drivers that can measure a task's use of CPU and memory.
type UsageReader interface {
	Usage(ctx context.Context, id string) (Usage, error)
}

// MemoryInUse is memory less the inactive page cache the kernel would take back first,
// never below zero: what Usage.MemoryBytes counts, from a cgroup's or Docker's numbers.
func MemoryInUse(memory, inactive uint64) uint64 {
	if inactive > memory {
		return 0
	}
	return memory - inactive
}
