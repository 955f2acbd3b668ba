package driver

// The cpu weight every driver gives a task, so that a process, a Docker container and a
// containerd one of the same request compete for the cpu alike. A revocable task gets
// the lowest weight: when the owners of the capacity it borrows need their cpu back, the
// kernel gives it to them at once, without waiting for the agent's eviction
// (docs/policy.md, "Revocable capacity"), as Kubernetes does for BestEffort pods and
// Mesos for revocable tasks.
const (
	// MinCPUShares is the kernel's least cpu.shares (cgroup v1), a revocable task's.
	MinCPUShares = 2
	// DefaultCPUShares is a task's without a cpu request (one core's worth).
	DefaultCPUShares = 1024
	// MaxCPUShares is the kernel's most cpu.shares; more is cut to it.
	MaxCPUShares = 262144
)

// CPUShares is the task's cgroup v1 cpu.shares: MinCPUShares for a revocable task, else
// request x 1024 (DefaultCPUShares without a request), within the kernel's bounds.
func (t *Task) CPUShares() uint64 {
	if t.Revocable {
		return MinCPUShares
	}
	shares := int64(t.CPURequest * 1024)
	if shares <= 0 {
		return DefaultCPUShares
	}
	return uint64(min(max(shares, MinCPUShares), MaxCPUShares))
}

// CPUWeight is the cgroup v2 cpu.weight (1 to 10000) for cpu.shares, by the linear
// conversion runc (and so Docker and containerd) has long made on a v2 host: 2 gives 1,
// 1024 gives 39, 262144 gives 10000. Newer runc releases map 1024 to 100 instead; every
// conversion gives a revocable task's 2 the weight 1.
func CPUWeight(shares uint64) uint64 {
	shares = min(max(shares, MinCPUShares), MaxCPUShares)
	return 1 + ((shares-2)*9999)/262142
}
