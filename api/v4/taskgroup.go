package v4

import (
	"slices"
	"strconv"
	"time"
)

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
	// Resources is the sum of the tasks' requests plus the executor's overhead, and
	// Overhead that overhead (docs/scheduling.md), recorded at placement; task groups
	// placed before it was recorded have none.
	Resources NodeResources `json:"resources"`
	Overhead  NodeResources `json:"overhead,omitzero"`
	// Ports are the host ports the task group holds on its node, fixed and random.
	Ports []AllocatedPort `json:"ports,omitempty"`
	// Attributes records, at placement, the node's value of every attribute the owner's
	// constraints name; UNIQUE, MAXPER and GROUPBY count these (BCS semantics).
	Attributes map[string]string `json:"attributes,omitempty"`
	// GPUs are the cards (or shares of one) the scheduler chose for the tasks that asked
	// for GPUs, on Node; the agent gives each task exactly these.
	GPUs []TaskGPU `json:"gpus,omitempty"`
	// Template is the pod to run: the owner's template when the task group was created.
	Template PodTemplate `json:"template"`
	// KillGracePeriod is the owner's killPolicy.gracePeriod (seconds, at least 1).
	KillGracePeriod int `json:"killGracePeriod,omitempty"`
	// Priority is the owner's resolved priority when the task group was created
	// (docs/policy.md, "Priorities and preemption"): preemption evicts only lower ones.
	Priority int `json:"priority,omitempty"`
	// Revocable marks a task group of the revocable tier (docs/policy.md, "Revocable
	// capacity"): it may run on lent capacity, is evicted first, and quotas skip it.
	Revocable bool `json:"revocable,omitempty"`
	// OwnerVersion is the owner's resourceVersion the template was taken from.
	OwnerVersion string `json:"ownerVersion,omitempty"`
	// Desired is DesiredRunning (default when empty) or DesiredStopped: the controller
	// asks the agent to stop the pod (a deliberate kill, which ends Finish).
	Desired string `json:"desired,omitempty"`
	// ReschedTimes counts how often this instance was restarted (BCS reschedTimes);
	// LastRescheduled is when it last was.
	ReschedTimes    int       `json:"reschedTimes,omitempty"`
	LastRescheduled time.Time `json:"lastRescheduled,omitzero"`
	// RecentRestarts are the times this instance was restarted within the last 30
	// minutes, carried from run to run: more than 3 is a restart storm. Unlike
	// ReschedTimes it never starts over.
	RecentRestarts []time.Time `json:"recentRestarts,omitempty"`
	// CrashLoops counts the runs of this instance before this one that ended soon after
	// starting, in a row (docs/operations.md, Crash-loop backoff): the floor of the next
	// restart delay doubles with it. A run that lasts 10 minutes starts it over.
	CrashLoops int `json:"crashLoops,omitempty"`
	// PortRetries counts the runs of this instance before this one, in a row, that did
	// not start because random host ports they were given were taken (ReasonPortConflict):
	// each was placed again at once on other ports, without a restart or a crash-loop
	// wait, up to a bound past which the restart policy takes over.
	PortRetries int `json:"portRetries,omitempty"`
	// JobIndex is the completion index of a run of an Indexed job, given to its tasks as
	// BERTH_JOB_INDEX; nil for every other task group.
	JobIndex *int `json:"jobIndex,omitempty"`
	// Step is set on a workflow step's task group: what the agent stages before the
	// tasks start and collects after the main task exits (nil for every other one).
	Step *StepIO `json:"step,omitempty"`
}

// Desired states of a task group.
const (
	DesiredRunning = "Running"
	DesiredStopped = "Stopped"
)

// AllocatedPort is a host port held by a task of the group.
type AllocatedPort struct {
	Name     string `json:"name"`
	HostPort int    `json:"hostPort"`
	Protocol string `json:"protocol,omitempty"`
	// Random is set when the scheduler chose the port from the node's ranges (the spec
	// asked for any port): a run that finds it taken is placed again on another.
	Random bool `json:"random,omitempty"`
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

// TaskGroupStatus is what the agent reports. Phase aggregates the tasks' statuses with
// BCS's precedence (AggregateTaskGroup).
type TaskGroupStatus struct {
	Phase string `json:"phase,omitempty"`
	// LastPhase is the phase before Phase (BCS's LastStatus). The server owns it, as
	// Remote: it keeps it when a write changes the phase; what an agent reports in its
	// place is ignored.
	LastPhase string    `json:"lastPhase,omitempty"`
	Message   string    `json:"message,omitempty"`
	Updated   time.Time `json:"updated,omitzero"`
	// HostIP is the node's IP (BCS_NODE_IP, ${hostip}).
	HostIP string       `json:"hostIP,omitempty"`
	Tasks  []TaskStatus `json:"tasks,omitempty"`
	// Healthy is false when a task's health check fails (nil: no checks or not yet known).
	Healthy *bool `json:"healthy,omitempty"`
	// Ready, set by the agent for a pod whose checks have roles, is whether every task
	// is ready (docs/pods.md, "Probes"); nil for the others, whose readiness is Healthy.
	Ready *bool `json:"ready,omitempty"`
	// StartedAt is when every task first ran; FinishedAt when the group ended.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// HealthKilled is set when the executor killed the group after consecutive health
	// check failures (the restart policy counts it as a failure).
	HealthKilled bool `json:"healthKilled,omitempty"`
	// GPUProblem, when set, says which of the task group's cards are unhealthy or gone
	// (the agent's word; the task keeps running, as the card may still serve it).
	GPUProblem string `json:"gpuProblem,omitempty"`
	// Remote is the result of the REMOTE_HTTP and REMOTE_TCP checks, which the leader
	// runs (nil until they answer, or without such checks). The server owns it: what an
	// agent reports in its place is ignored.
	Remote *RemoteHealth `json:"remote,omitempty"`
	// Reason is the cause of a Failed run in a word, when berth knows it:
	// ReasonPortConflict when host ports it was given were held by another program, which
	// PortsTaken names. The controllers act on it; Message says it in words.
	Reason     string     `json:"reason,omitempty"`
	PortsTaken []BusyPort `json:"portsTaken,omitempty"`
	// Step is what the agent collected from a workflow step (TaskGroupSpec.Step).
	Step *StepResult `json:"step,omitempty"`
}

// KeepLastPhase sets s.LastPhase from old, the status s replaces: old's phase when the
// phase changes, else old's own LastPhase.
func (s *TaskGroupStatus) KeepLastPhase(old TaskGroupStatus) {
	s.LastPhase = lastPhase(s.Phase, old.Phase, old.LastPhase)
	if len(s.Tasks) == 0 || len(old.Tasks) == 0 {
		return
	}
	s.Tasks = slices.Clone(s.Tasks) // the caller's reported tasks may be shared
	// A task is most often where it was: the map of the old ones by name is made only
	// for one that is not (this runs for every status an agent reports).
	var before map[string]TaskStatus
	for i, t := range s.Tasks {
		var o TaskStatus
		if i < len(old.Tasks) && old.Tasks[i].Name == t.Name {
			o = old.Tasks[i]
		} else {
			if before == nil {
				before = make(map[string]TaskStatus, len(old.Tasks))
				for _, t := range old.Tasks {
					before[t.Name] = t
				}
			}
			o = before[t.Name]
		}
		s.Tasks[i].LastStatus = lastPhase(t.Status, o.Status, o.LastStatus)
	}
}

// RemoteHealth is the state of a task group's remote checks: healthy when every one
// passed its last probe.
type RemoteHealth struct {
	Healthy bool      `json:"healthy"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// TaskStatus is one task (container or process) of a task group.
type TaskStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Staging, Starting, Running, Finish, Failed, Killing, ...
	// Role is the task's lifecycle role: "init", "sidecar", or empty for a main task.
	Role string `json:"role,omitempty"`
	// LastStatus is the status before Status, kept by the server as the group's
	// LastPhase (BCS's task LastStatus).
	LastStatus string `json:"lastStatus,omitempty"`
	Message    string `json:"message,omitempty"`
	// Healthy is the latest health check result (nil without a local check or during its
	// grace period); ConsecutiveFailures counts failed checks in a row.
	Healthy             *bool  `json:"healthy,omitempty"`
	ConsecutiveFailures int    `json:"consecutiveFailures,omitempty"`
	HealthMessage       string `json:"healthMessage,omitempty"`
	// Ready is the task's readiness when its pod has checks with roles (docs/pods.md,
	// "Probes"): its readiness check's result, else its liveness check's, once its
	// startup check passed; nil while unknown. ReadyMessage says why it is not.
	Ready        *bool  `json:"ready,omitempty"`
	ReadyMessage string `json:"readyMessage,omitempty"`
	// Info is BCS's container info (BcsContainerInfo), with its CamelCase keys.
	Info ContainerInfo `json:"info"`
}

// ContainerInfo is BCS's BcsContainerInfo: the JSON keys are BCS's own, so clients written
// for BCS read it unchanged.
type ContainerInfo struct {
	ID                      string    `json:"ID,omitempty"`
	Name                    string    `json:"Name,omitempty"`
	Pid                     int       `json:"Pid,omitempty"`
	StartAt                 time.Time `json:"StartAt,omitzero"`
	FinishAt                time.Time `json:"FinishAt,omitzero"`
	Status                  string    `json:"Status,omitempty"` // created, running, paused, restarting, exited, dead
	ExitCode                int       `json:"ExitCode"`
	Hostname                string    `json:"Hostname,omitempty"`
	NetworkMode             string    `json:"NetworkMode,omitempty"`
	IPAddress               string    `json:"IPAddress,omitempty"`
	NodeAddress             string    `json:"NodeAddress,omitempty"`
	Healthy                 bool      `json:"Healthy"`
	IsChecked               bool      `json:"IsChecked"`
	ConsecutiveFailureTimes int       `json:"ConsecutiveFailureTimes"`
	OOMKilled               bool      `json:"OOMKilled"`
	Message                 string    `json:"Message,omitempty"`
}

// TaskNames returns the names of a pod's tasks in order: a container's name, or "c{i}"
// when it has none; a process's procName, suffixed "-{i}" when two share it.
func TaskNames(p *PodSpec) []string {
	var out []string
	seen := map[string]bool{}
	for i, c := range p.Containers {
		n := c.Name
		if n == "" || seen[n] {
			n = "c" + strconv.Itoa(i)
		}
		seen[n] = true
		out = append(out, n)
	}
	for i, t := range p.Processes {
		n := t.ProcName
		if seen[n] {
			n += "-" + strconv.Itoa(i)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}
