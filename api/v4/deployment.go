package v4

// Deployment rolls an application (or process) from one template version to the next.
type Deployment struct {
	TypeMeta
	Metadata      ObjectMeta     `json:"metadata"`
	RestartPolicy *RestartPolicy `json:"restartPolicy,omitempty"`
	KillPolicy    *KillPolicy    `json:"killPolicy,omitempty"`
	Constraint    *Constraint    `json:"constraint,omitempty"`
	Spec          DeploymentSpec `json:"spec"`
	// Status is written by berth (the deployment controller and the rollout endpoints);
	// what users send is ignored.
	Status DeploymentStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (d *Deployment) GetMeta() *ObjectMeta { return &d.Metadata }

// DeploymentSpec: with a template the deployment owns its application; without one it
// binds an existing application matched by Selector.
type DeploymentSpec struct {
	Instance int                `json:"instance"`
	Selector map[string]string  `json:"selector,omitempty"`
	Template *PodTemplate       `json:"template,omitempty"`
	Strategy DeploymentStrategy `json:"strategy"`
	// StoppedInstances are the indexes of the instances stopped on purpose, in every
	// revision: a rollout keeps them stopped (docs/lifecycle.md, "Stopped instances").
	StoppedInstances []int `json:"stoppedInstances,omitempty"`
	// Scheduling names the priority class and disruption budget, which the deployment's
	// applications take (docs/policy.md, "Priorities and preemption").
	Scheduling
}

// Deployment strategy and rolling orders.
const (
	StrategyRollingUpdate = "RollingUpdate"
	// StrategyRecreate stops every old instance, then starts the new ones: a rolling
	// update in one step, DeleteFirst with every instance unavailable (BCS declared it;
	// its Mesos scheduler rolled anyway).
	StrategyRecreate   = "Recreate"
	RollingCreateFirst = "CreateFirst"
	RollingDeleteFirst = "DeleteFirst"
)

// DeploymentStrategy selects how a new version replaces the old one.
type DeploymentStrategy struct {
	Type          string         `json:"type"`
	RollingUpdate *RollingUpdate `json:"rollingupdate,omitempty"`
}

// RollingUpdate tunes a rolling update. BCS spells maxUnavailable "maxUnavilable";
// both spellings are accepted on input.
type RollingUpdate struct {
	MaxUnavailable  int    `json:"maxUnavailable,omitempty" alias:"maxUnavilable"`
	MaxSurge        int    `json:"maxSurge,omitempty"`
	UpgradeDuration int    `json:"upgradeDuration,omitempty"`
	RollingOrder    string `json:"rollingOrder,omitempty"`
	RollingManually bool   `json:"rollingManually,omitempty"`
	// StepDeadline (berth) is how many seconds one step may wait for its new instances to
	// become available before the rollout is suspended (default 360: BCS's 300 + 60).
	StepDeadline int `json:"stepDeadline,omitempty"`
}

// DefaultStepDeadline is RollingUpdate.StepDeadline when left out (seconds).
const DefaultStepDeadline = 360
