package v4

// Health check types. HTTP, TCP and COMMAND run on the agent (at most one of them);
// REMOTE_HTTP and REMOTE_TCP run on the server (at most one of each).
const (
	CheckHTTP       = "HTTP"
	CheckTCP        = "TCP"
	CheckCommand    = "COMMAND"
	CheckRemoteHTTP = "REMOTE_HTTP"
	CheckRemoteTCP  = "REMOTE_TCP"
)

// Roles of a local check (docs/pods.md, "Probes"). A check without one is a liveness
// check, as BCS's were.
const (
	ProbeLiveness  = "liveness"
	ProbeReadiness = "readiness"
	ProbeStartup   = "startup"
)

// HealthCheck probes a task. Durations are seconds.
type HealthCheck struct {
	Type string `json:"type"`
	// Role, berth's own, is what a local check decides: liveness (the default: failures
	// kill the task group), readiness (failures take it out of its services' endpoints and
	// hold a rollout, never kill it), or startup (liveness and readiness wait until it
	// passes; failures kill). At most one local check per role.
	Role                string        `json:"role,omitempty"`
	DelaySeconds        int           `json:"delaySeconds,omitempty"`
	IntervalSeconds     int           `json:"intervalSeconds,omitempty"`
	TimeoutSeconds      int           `json:"timeoutSeconds,omitempty"`
	ConsecutiveFailures int           `json:"consecutiveFailures,omitempty"`
	GracePeriodSeconds  int           `json:"gracePeriodSeconds,omitempty"`
	Command             *CommandCheck `json:"command,omitempty"`
	HTTP                *HTTPCheck    `json:"http,omitempty"`
	TCP                 *TCPCheck     `json:"tcp,omitempty"`
}

// CommandCheck runs Value; exit status 0 is healthy.
type CommandCheck struct {
	Value string `json:"value"`
}

// HTTPCheck sends GET scheme://host:port/path; 200-399 is healthy. Port wins over PortName.
type HTTPCheck struct {
	Port     int               `json:"port,omitempty"`
	PortName string            `json:"portName,omitempty"`
	Scheme   string            `json:"scheme,omitempty"`
	Path     string            `json:"path,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
}

// TCPCheck connects to the port; a connection is healthy.
type TCPCheck struct {
	Port     int    `json:"port,omitempty"`
	PortName string `json:"portName,omitempty"`
}

// ProbeRole is the check's role, ProbeLiveness when it has none.
func (h *HealthCheck) ProbeRole() string {
	if h.Role == "" {
		return ProbeLiveness
	}
	return h.Role
}
