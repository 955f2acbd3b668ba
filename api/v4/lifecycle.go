package v4

// Lifecycle places a task in its pod's start and stop order and gives it hooks
// (docs/pods.md). A task without one is a main task: BCS's pods have only those, and keep
// BCS's semantics (every task started in order, any exit ends the pod).
type Lifecycle struct {
	// Init: the task runs to success, in the order of the init tasks, before the pod's
	// main tasks start (Kubernetes' init containers). It takes no hooks and no checks.
	Init bool `json:"init,omitempty"`
	// Sidecar: the task starts before the init and main tasks (and passes its check
	// first when it has one), keeps running, and stops after the main tasks, in reverse
	// order.
	Sidecar bool `json:"sidecar,omitempty"`
	// PostStart runs once the task started; the task counts as started when it
	// succeeded, and the pod fails when it does not.
	PostStart *Hook `json:"postStart,omitempty"`
	// PreStop runs before a deliberate stop's signal (stopCmd, SIGTERM), within the kill
	// grace period; a failure is an event, and the stop goes on.
	PreStop *Hook `json:"preStop,omitempty"`
}

// Hook is a command run in the task, or an HTTP GET to one of the task's ports: exactly
// one of Exec and HTTPGet.
type Hook struct {
	Exec    *ExecHook  `json:"exec,omitempty"`
	HTTPGet *HTTPCheck `json:"httpGet,omitempty"`
	// TimeoutSeconds bounds the hook (default DefaultHookTimeout, at most
	// MaxHookTimeout); a preStop hook also ends with the kill grace period.
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

// ExecHook runs Command with the shell in the task's context (a process's work
// directory and env, docker exec for a container), as a COMMAND check does; exit status
// 0 is success.
type ExecHook struct {
	Command string `json:"command"`
}

// Hook timeouts, in seconds.
const (
	DefaultHookTimeout = 30
	MaxHookTimeout     = 600
)

// Task roles, as TaskStatus.Role reports them; a main task has none.
const (
	RoleInit    = "init"
	RoleSidecar = "sidecar"
)

// NetworkHolderTask names the task that holds a container pod's network when its first
// task to start is an init task (docs/pods.md): no container may take the name.
const NetworkHolderTask = "berth-network"

// Role is the task's role: RoleInit, RoleSidecar, or "" for a main task.
func (l *Lifecycle) Role() string {
	switch {
	case l == nil:
		return ""
	case l.Init:
		return RoleInit
	case l.Sidecar:
		return RoleSidecar
	}
	return ""
}

// TaskLifecycles returns the lifecycle of every task of the pod, in TaskNames' order
// (nil for a task without one).
func TaskLifecycles(p *PodSpec) []*Lifecycle {
	out := make([]*Lifecycle, 0, len(p.Containers)+len(p.Processes))
	for i := range p.Containers {
		out = append(out, p.Containers[i].Lifecycle)
	}
	for i := range p.Processes {
		out = append(out, p.Processes[i].Lifecycle)
	}
	return out
}
