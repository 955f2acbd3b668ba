package v4

import "time"

// KindTaskGroup names the instances of applications and processes. Task groups are
// written by berth (the controllers and the scheduler), never applied by users.
const KindTaskGroup Kind = "taskgroup"

// TaskGroup is one instance (pod) of an application or process, bound to a node. Its name
// is BCS's task group ID "{index}.{app}.{namespace}.{cluster}.{unixNano}".
type TaskGroup struct {
	TypeMeta
	Metadata ObjectMeta      `json:"metadata"`
	Spec     TaskGroupSpec   `json:"spec"`
	Status   TaskGroupStatus `json:"status"`
}

// GetMeta returns the object's metadata.
func (t *TaskGroup) GetMeta() *ObjectMeta { return &t.Metadata }

// OwnerRef names the application or process a task group belongs to.
type OwnerRef struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
}

// TaskGroupSpec is what the scheduler decided for one instance.
type TaskGroupSpec struct {
	Owner OwnerRef `json:"owner"`
	Index int      `json:"index"`
	Node  string   `json:"node"`
	// Labels are the owner's labels merged with its template's (EXCLUDE matches them).
	Labels map[string]string `json:"labels,omitempty"`
	// Resources is the sum of the tasks' requests plus the executor's overhead.
	Resources NodeResources `json:"resources"`
	// Ports are the host ports the task group holds on its node, fixed and random.
	Ports []AllocatedPort `json:"ports,omitempty"`
	// Attributes records, at placement, the node's value of every attribute the owner's
	// constraints name; UNIQUE, MAXPER and GROUPBY count these (BCS semantics).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// AllocatedPort is a host port held by a task of the group.
type AllocatedPort struct {
	Name     string `json:"name"`
	HostPort int    `json:"hostPort"`
	Protocol string `json:"protocol,omitempty"`
}

// Task and task group statuses (BCS vocabulary).
const (
	StatusStaging    = "Staging"
	StatusStarting   = "Starting"
	StatusRunning    = "Running"
	StatusFinish     = "Finish"
	StatusError      = "Error"
	StatusKilling    = "Killing"
	StatusKilled     = "Killed"
	StatusFailed     = "Failed"
	StatusLost       = "Lost"
	StatusRestarting = "Restarting"
)

// TaskGroupStatus is what the agent reports.
type TaskGroupStatus struct {
	Phase   string    `json:"phase,omitempty"`
	Message string    `json:"message,omitempty"`
	Updated time.Time `json:"updated,omitzero"`
}
