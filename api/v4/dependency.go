package v4

import "time"

// KindDependency is berth's version of Lain deployd's dependency pod: a pod template that
// runs on a node only while task groups that declare it run there, shared per node or per
// namespace on that node.
const KindDependency Kind = "dependency"

// Dependency policies: how dependents share a dependency's pods.
const (
	// DependencyPolicyNode shares one pod per node among every dependent there.
	DependencyPolicyNode = "node"
	// DependencyPolicyNamespace shares one pod per node among the dependents of one
	// namespace (deployd's policy 0, its default).
	DependencyPolicyNamespace = "namespace"
)

// Dependency is registered without running anything; the dependency controller starts a
// pod on a node when the first dependent task group lands there.
type Dependency struct {
	TypeMeta
	Metadata      ObjectMeta     `json:"metadata"`
	RestartPolicy *RestartPolicy `json:"restartPolicy,omitempty"`
	KillPolicy    *KillPolicy    `json:"killPolicy,omitempty"`
	// Constraint limits the nodes a pod may run on; a dependent elsewhere runs without it
	// (a FailedScheduling event says so).
	Constraint *Constraint    `json:"constraint,omitempty"`
	Spec       DependencySpec `json:"spec"`
	// Status is written by the dependency controller; what users send is ignored.
	Status DependencyStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (d *Dependency) GetMeta() *ObjectMeta { return &d.Metadata }

// DependencySpec holds the pod every node (or namespace on a node) shares.
type DependencySpec struct {
	Template PodTemplate `json:"template"`
}

// DependencyStatus lists the dependency's pods with their reference counts.
type DependencyStatus struct {
	Pods    []DependencyPod `json:"pods,omitempty"`
	Message string          `json:"message,omitempty"`
	// Updated is when the status last changed.
	Updated time.Time `json:"updated,omitzero"`
}

// IsZero reports whether the status is empty (nothing written by the controller yet).
func (s DependencyStatus) IsZero() bool {
	return len(s.Pods) == 0 && s.Message == "" && s.Updated.IsZero()
}

// DependencyPod is one shared pod: where it runs, for whom and how many use it.
type DependencyPod struct {
	Node string `json:"node"`
	// Policy is "node" or "namespace"; Scope is the dependents' namespace for the
	// namespace policy and empty for the node policy.
	Policy string `json:"policy"`
	Scope  string `json:"scope,omitempty"`
	// TaskGroup is the pod's current task group (empty while none runs) and Phase its phase.
	TaskGroup string `json:"taskGroup,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// RefCount counts the live dependent task groups (not ended, not being stopped).
	RefCount int `json:"refCount"`
	// LastUsed is when the pod was last seen with dependents; it is set once the count
	// falls to 0 (empty while the pod is in use). The pod is collected DependencyGC later.
	LastUsed time.Time `json:"lastUsed,omitzero"`
}

// DependencyRef is one entry of a pod's spec.dependencies.
type DependencyRef struct {
	Name string `json:"name"`
	// Namespace of the dependency; Default fills in the dependent's own namespace.
	Namespace string `json:"namespace,omitempty"`
	// Policy is "namespace" (default) or "node".
	Policy string `json:"policy,omitempty"`
}
