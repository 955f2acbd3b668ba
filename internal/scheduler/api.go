package scheduler

import (
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Scoring strategies.
const (
	// Spread puts the next instance on the node with the most free cpu and memory
	// (free/allocatable ratios summed), as BCS ranks its offers.
	Spread = "spread"
	// Binpack puts it on the fullest node that still fits.
	Binpack = "binpack"
)

// StrategyAnnotation selects the strategy of one application ("spread" or "binpack");
// without it the cluster-wide Options.Strategy applies.
const StrategyAnnotation = v4.PlacementAnnotation

// DefaultOverhead is what the executor of each task group needs on top of its tasks
// (BCS: 0.01 cpu, 64 MB memory and 64 MB disk).
var DefaultOverhead = v4.NodeResources{CPU: 0.01, MemoryMB: 64, DiskMB: 64}

// DefaultCluster is the cluster part of task group IDs when Options.Cluster is empty.
const DefaultCluster = "berth"

// Options tune a placement pass.
type Options struct {
	Strategy string           // Spread (default) or Binpack, unless a request says otherwise
	Overhead v4.NodeResources // added to every task group; zero value means DefaultOverhead
	Cluster  string           // cluster part of task group IDs; DefaultCluster when empty
	// Now gives the timestamp part of task group IDs; time.Now when nil.
	Now func() time.Time
}

// Placement is where one instance goes.
type Placement struct {
	Index int
	// Name is the task group's ID, "{index}.{app}.{namespace}.{cluster}.{unixNano}" as in
	// BCS; the snapshot accounts for the placement under it, so storing the task group
	// under this name later replaces the placement instead of counting it twice.
	Name string
	Node string
	// Ports are the host ports it holds there (fixed and random).
	Ports []v4.AllocatedPort
	// PassedOver are ports of the node's ranges below its random ports that it did not
	// get because other programs hold them (the node's busy ports, or ones a start
	// found taken), at most 16: why it got the ports it got.
	PassedOver []int
	// Attributes are the node's values of the attributes the constraints name (hostname
	// included), recorded on the task group for later UNIQUE/MAXPER/GROUPBY counts.
	Attributes map[string]string
	// Resources is what the task group takes from the node (tasks plus overhead), and
	// Overhead the executor's part of it.
	Resources v4.NodeResources
	Overhead  v4.NodeResources
	// GPUs are the cards chosen for its tasks (none on a node without a GPU inventory).
	GPUs []v4.TaskGPU
}

// Result is the outcome of placing one request.
type Result struct {
	Request    *Request
	Placements []Placement
	// Unplaced lists the indexes that fit nowhere; Reason says why, per check.
	Unplaced []int
	Reason   *Reason
}
