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
