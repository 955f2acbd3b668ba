package v4

import "time"

// Workload is the shape shared by applications and processes (BCS ReplicaController):
// a number of instances of one pod template, with restart, kill and placement policies.
type Workload struct {
	TypeMeta
	Metadata      ObjectMeta     `json:"metadata"`
	RestartPolicy *RestartPolicy `json:"restartPolicy,omitempty"`
	KillPolicy    *KillPolicy    `json:"killPolicy,omitempty"`
	Constraint    *Constraint    `json:"constraint,omitempty"`
	Spec          WorkloadSpec   `json:"spec"`
	// Status is written by berth's application controller; what users send is ignored.
	Status WorkloadStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (w *Workload) GetMeta() *ObjectMeta { return &w.Metadata }

// WorkloadStatus aggregates an application's task groups (BCS application status).
type WorkloadStatus struct {
	Phase string `json:"phase,omitempty"`
	// LastPhase is the phase before Phase (BCS's LastStatus): the controller keeps it
	// when the phase changes; empty until the first change.
	LastPhase string `json:"lastPhase,omitempty"`
	// Instances is the defined count, Running how many task groups run.
	Instances int `json:"instances"`
	Running   int `json:"running"`
	// Stopped counts the instances stopped on purpose (spec.stoppedInstances): they
	// count in Instances, not in Running.
	Stopped int    `json:"stopped,omitempty"`
	Message string `json:"message,omitempty"`
	// BackOff lists the instances whose ended run waits for its restart, lowest indexes
	// first (at most MaxBackOffListed of them).
	BackOff []InstanceBackOff `json:"backOff,omitempty"`
	// Pending says why instances wait for a node; nil while none waits.
	Pending *Pending `json:"pending,omitempty"`
	// Nominated are the instances waiting for the victims of their preemption to stop
	// (docs/policy.md, "Priorities and preemption").
	Nominated []Nomination `json:"nominated,omitempty"`
	// Updated is when the phase or counts last changed.
	Updated time.Time `json:"updated,omitzero"`
}

// MaxBackOffListed bounds WorkloadStatus.BackOff, so the status of a large application
// in a crash loop stays small.
const MaxBackOffListed = 20

// InstanceBackOff is an instance waiting to be restarted.
type InstanceBackOff struct {
	Index     int    `json:"index"`
	TaskGroup string `json:"taskgroup"`
	// Reason is CrashLoopBackOff when the run ended soon after starting and the crash-loop
	// floor set the delay, BackOff when the restart policy's interval and backoff did.
	Reason    string    `json:"reason"`
	RestartAt time.Time `json:"restartAt"`
	// Restart is the number of the coming restart (the replacement's reschedTimes).
	Restart int `json:"restart"`
	// LastExit says how the ended run ended ("task web exited with code 1").
	LastExit string `json:"lastExit,omitempty"`
}

// KeepLastPhase sets s.LastPhase from old, the status s replaces: old's phase when the
// phase changes, else old's own LastPhase.
func (s *WorkloadStatus) KeepLastPhase(old WorkloadStatus) {
	s.LastPhase = lastPhase(s.Phase, old.Phase, old.LastPhase)
}

// lastPhase is the phase before phase, given the phase and last phase it replaces.
func lastPhase(phase, oldPhase, oldLast string) string {
	if oldPhase != "" && oldPhase != phase {
		return oldPhase
	}
	return oldLast
}

// Equal reports whether two statuses say the same, Updated aside.
func (s WorkloadStatus) Equal(o WorkloadStatus) bool {
	if s.Phase != o.Phase || s.LastPhase != o.LastPhase || s.Instances != o.Instances || s.Running != o.Running || s.Stopped != o.Stopped || s.Message != o.Message ||
		len(s.BackOff) != len(o.BackOff) || !s.Pending.Equal(o.Pending) || !equalNominations(s.Nominated, o.Nominated) {
		return false
	}
	for i, b := range s.BackOff {
		c := o.BackOff[i]
		if b.Index != c.Index || b.TaskGroup != c.TaskGroup || b.Reason != c.Reason || !b.RestartAt.Equal(c.RestartAt) ||
			b.Restart != c.Restart || b.LastExit != c.LastExit {
			return false
		}
	}
	return true
}

// Application runs containers (spec.template.spec.containers).
type Application struct{ Workload }

// Process runs plain processes on the host (spec.template.spec.processes).
type Process struct{ Workload }

// WorkloadSpec is spec of an application or process.
type WorkloadSpec struct {
	Instance int         `json:"instance"`
	Template PodTemplate `json:"template"`
	// StoppedInstances are the indexes of the instances stopped on purpose
	// (docs/lifecycle.md, "Stopped instances"): berth stop and berth start set them.
	StoppedInstances []int `json:"stoppedInstances,omitempty"`
	// Scheduling names the priority class and disruption budget (docs/policy.md,
	// "Priorities and preemption").
	Scheduling
}

// PodTemplate describes one task group (pod).
type PodTemplate struct {
	Metadata *TemplateMeta `json:"metadata,omitempty"`
	Spec     PodSpec       `json:"spec"`
}

// TemplateMeta carries labels and annotations merged into every task group.
type TemplateMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodSpec lists the tasks of a pod: containers or processes, never both.
type PodSpec struct {
	Containers  []Container   `json:"containers,omitempty"`
	Processes   []ProcessTask `json:"processes,omitempty"`
	NetworkMode string        `json:"networkMode,omitempty"`
	// NetworkType is "cnm" (default) or "cni". BCS spells the key in lowercase.
	NetworkType string    `json:"networktype,omitempty"`
	NetLimit    *NetLimit `json:"netLimit,omitempty"`
	// Dependencies are dependency pods (deployd) this pod needs on its node.
	Dependencies []DependencyRef `json:"dependencies,omitempty"`
	// Volumes are the pod's own volumes, which its tasks mount by name.
	Volumes []PodVolume `json:"volumes,omitempty"`
	// Runtime names the OCI runtime handler the pod's containers run with (runc, crun,
	// or one the node's operator declared, such as runsc or kata): the pod goes only to
	// a node that offers it (AttrContainerRuntimes). Empty: the node's default. Never
	// for processes.
	Runtime string `json:"runtime,omitempty"`
}

// NetLimit caps a pod's egress bandwidth in Mbit/s.
type NetLimit struct {
	EgressLimit int `json:"egressLimit"`
}

// Restart policies.
const (
	RestartNever     = "Never"
	RestartAlways    = "Always"
	RestartOnFailure = "OnFailure"
)

// RestartPolicy says when a failed (or lost) task group is started again and how fast.
// The delay before restart n (from 0) is Interval + n*Backoff seconds; MaxTimes 0 is unlimited.
type RestartPolicy struct {
	Policy         string `json:"policy,omitempty"`
	Interval       int    `json:"interval,omitempty"`
	Backoff        int    `json:"backoff,omitempty"`
	MaxTimes       int    `json:"maxtimes,omitempty"`
	HostRetainTime int    `json:"hostRetainTime,omitempty"`
}

// KillPolicy gives tasks GracePeriod seconds to stop before they are killed.
type KillPolicy struct {
	GracePeriod int `json:"gracePeriod,omitempty"`
}

// Daemonset runs one task group on every eligible node.
type Daemonset struct {
	TypeMeta
	Metadata      ObjectMeta     `json:"metadata"`
	RestartPolicy *RestartPolicy `json:"restartPolicy,omitempty"`
	KillPolicy    *KillPolicy    `json:"killPolicy,omitempty"`
	Constraint    *Constraint    `json:"constraint,omitempty"`
	Spec          DaemonsetSpec  `json:"spec"`
	// Status is written by berth's daemonset controller; what users send is ignored.
	Status DaemonsetStatus `json:"status,omitzero"`
}

// DaemonsetStatus aggregates a daemonset's task groups, one per node.
type DaemonsetStatus struct {
	// Phase is the application phase vocabulary (Deploying, Running, Abnormal, ...).
	Phase string `json:"phase,omitempty"`
	// Desired counts the nodes that run or should run a task group; Current those that
	// have one; Running those whose task group runs; UpToDate those whose task group
	// runs the current template.
	Desired  int    `json:"desired"`
	Current  int    `json:"current"`
	Running  int    `json:"running"`
	UpToDate int    `json:"upToDate"`
	Message  string `json:"message,omitempty"`
	// Updated is when the phase or counts last changed.
	Updated time.Time `json:"updated,omitzero"`
}

// GetMeta returns the object's metadata.
func (d *Daemonset) GetMeta() *ObjectMeta { return &d.Metadata }

// DaemonsetSpec holds the pod template run on each node.
type DaemonsetSpec struct {
	Template PodTemplate `json:"template"`
	// Scheduling names the priority class recorded on the daemon's task groups; a
	// daemon has no tier and no disruption budget (it is never a victim).
	Scheduling
}
