package v4

import "time"

// TaskGroupUsage is what a task group's tasks use now, measured by its node's runtime
// (GET /v1/namespaces/NS/taskgroups/NAME/usage): CPU time is a counter, so two samples
// give the cores used between them.
type TaskGroupUsage struct {
	Time  time.Time   `json:"time"`
	Node  string      `json:"node"`
	Tasks []TaskUsage `json:"tasks"`
}

// TaskUsage is one task's use: the CPU time it has used since it started, the memory it
// holds (less the inactive page cache) and its memory limit (0: none). Error says why the
// task could not be measured (not started, a driver that cannot), the numbers are then 0.
type TaskUsage struct {
	Name             string  `json:"name"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	MemoryBytes      uint64  `json:"memoryBytes"`
	MemoryLimitBytes uint64  `json:"memoryLimitBytes,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// NodeUsage is what a node uses now (GET /v1/nodes/NAME/usage): the machine as its
// kernel counts it, the sum of its instances as their runtimes measure them (the numbers
// of TaskGroupUsage), and, for comparison, what berth may hand out there and what its
// task groups reserve. The agent measures; the server adds Allocatable and Reserved.
type NodeUsage struct {
	Time time.Time `json:"time"`
	Node string    `json:"node"`
	// WindowSeconds is the time between this sample and the agent's one before, over
	// which the CPU cores below are measured: 0 on the agent's first sample, whose cores
	// are then 0 too. The agent samples at most every few seconds, so callers close
	// together share a sample.
	WindowSeconds float64           `json:"windowSeconds"`
	Host          HostUsage         `json:"host"`
	Instances     InstancesUsage    `json:"instances"`
	Allocatable   NodeResources     `json:"allocatable"`
	Reserved      NodeReservedUsage `json:"reserved"`
}

// HostUsage is the whole machine: the cores busy over the window (/proc/stat), its busy
// CPU time since boot (a counter) and the memory in use (MemTotal less MemAvailable of
// /proc/meminfo), of MemoryTotalBytes.
type HostUsage struct {
	CPUCores         float64 `json:"cpuCores"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	MemoryBytes      uint64  `json:"memoryBytes"`
	MemoryTotalBytes uint64  `json:"memoryTotalBytes"`
	Error            string  `json:"error,omitempty"`
}

// InstancesUsage sums the node's instances: the cores their tasks used over the window
// (tasks measured in both samples only) and the memory they hold. Tasks counts those
// measured now, Unmeasured those that could not be (Error of TaskUsage).
type InstancesUsage struct {
	Count       int     `json:"count"`
	Tasks       int     `json:"tasks"`
	Unmeasured  int     `json:"unmeasured,omitempty"`
	CPUCores    float64 `json:"cpuCores"`
	MemoryBytes uint64  `json:"memoryBytes"`
}

// NodeReservedUsage is what the node's task groups reserve (their requests, as the
// scheduler accounts them) and how many task groups it holds.
type NodeReservedUsage struct {
	CPU        float64 `json:"cpu"`
	MemoryMB   float64 `json:"memoryMB"`
	TaskGroups int     `json:"taskGroups"`
	// OverheadCPU and OverheadMemoryMB are the executors' part of CPU and MemoryMB: each
	// task group reserves its tasks' requests and the executor's overhead (docs/scheduling.md).
	OverheadCPU      float64 `json:"overheadCPU,omitempty"`
	OverheadMemoryMB float64 `json:"overheadMemoryMB,omitempty"`
}
