package v4

import (
	"regexp"
	"time"
)

// Types of the agent protocol (docs/agent.md), shared by the server and the agent.

// AgentHeartbeat is the body of PUT /v1/agent/nodes/{name}/heartbeat, and one line of
// the body of the heartbeat stream, POST /v1/agent/nodes/{name}/heartbeats.
type AgentHeartbeat struct {
	AgentVersion string `json:"agentVersion,omitempty"`
	// AgentAddress is where the agent serves logs and actions ("host:port").
	AgentAddress string `json:"agentAddress,omitempty"`
}

// HeartbeatAckEvery is how often a server acknowledges the beats of a heartbeat stream:
// the first beat, and then the first beat that comes at least this long after the last
// acknowledgement. An agent that gets none for a beat that was due one takes the server
// for gone.
const HeartbeatAckEvery = 10 * time.Second

// HeartbeatAck is one acknowledgement line of the heartbeat stream's answer.
type HeartbeatAck struct {
	// IntervalSeconds is how often the server wants the agent to beat on this stream: it
	// grows with the number of nodes, so that the cluster's beats stay under the server's
	// bound (docs/agent.md, "Heartbeat interval and node TTL"). Absent (a cluster small
	// enough, or an earlier server): the agent beats at its own interval. An agent that
	// ignores it stays correct: the node's TTL never falls below the server's --node-ttl.
	IntervalSeconds int `json:"intervalSeconds,omitempty"`
}

// The interval a server gives its agents lies between these two: the floor is the
// agent's default interval, and the ceiling bounds how late a node's loss is noticed
// however large the cluster (a node beating at the ceiling, with the default
// --node-ttl, is Lost within about three minutes of its last beat; Nomad's default
// bound gives a 10,000-node cluster a 200 s TTL). An agent takes an interval over the
// ceiling as the ceiling; an agent of an earlier release, whose ceiling was 10 s, beats
// more often than it is told, which only costs beats (the node's TTL follows the
// interval told).
const (
	MinHeartbeatInterval = 3 * time.Second
	MaxHeartbeatInterval = 60 * time.Second
)

// TaskGroupRef names one task group.
type TaskGroupRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// TaskGroupReport is one task group's status in a full report.
type TaskGroupReport struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Status    TaskGroupStatus `json:"status"`
}

// AgentReport is the body of POST /v1/agent/nodes/{name}/report: the status of every
// task group the agent runs.
type AgentReport struct {
	TaskGroups []TaskGroupReport `json:"taskGroups"`
}

// AgentReportResult answers a full report: the task groups the server does not have (or
// that are bound to another node), which the agent stops and removes.
type AgentReportResult struct {
	Unknown []TaskGroupRef `json:"unknown"`
}

// AgentStatuses is the body of POST /v1/agent/nodes/{name}/statuses: the changed
// statuses of some of the node's task groups, each written as a status write of its own
// (PUT /v1/agent/taskgroups/{ns}/{name}/status) would write it, in one request.
type AgentStatuses struct {
	TaskGroups []TaskGroupReport `json:"taskGroups"`
}

// MaxAgentStatuses bounds the statuses of one AgentStatuses.
const MaxAgentStatuses = 200

// AgentStatusesResult answers AgentStatuses: one answer for each status, in its order.
type AgentStatusesResult struct {
	Results []AgentStatusAnswer `json:"results"`
}

// AgentStatusAnswer is what became of one status of AgentStatuses: Code is the HTTP
// status its own write would have answered (200 written or ignored, 404 the task group
// is gone, 403 it is bound to another node, 422 the status is invalid, 409 or 5xx a
// write to retry), Message says why when it is not 200.
type AgentStatusAnswer struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

// Task group actions (POST .../taskgroups/{name}/actions/{action}): a process's
// reloadCmd or restartCmd, or a signal (?signal=) to each task's main process.
const (
	ActionReload  = "reload"
	ActionRestart = "restart"
	ActionSignal  = "signal"
)

// The streams of a task's logs (GET .../taskgroups/{name}/logs?stream=): one of them
// alone; no stream for both, in the order they were written.
const (
	LogStreamStdout = "stdout"
	LogStreamStderr = "stderr"
)

// ValidLogStream reports whether s selects a task's log streams: "", LogStreamStdout or
// LogStreamStderr.
func ValidLogStream(s string) bool {
	return s == "" || s == LogStreamStdout || s == LogStreamStderr
}

// AgentCertificateRequest is the body of POST /v1/agent/certificate (with the join token)
// and of POST /v1/agent/certificate/renew (with the node's current certificate): a PEM
// certificate signing request for the node's new key. The renewal's node is the one its
// current certificate names.
type AgentCertificateRequest struct {
	NodeName string `json:"nodeName,omitempty"`
	CSR      string `json:"csr"`
}

// AgentCertificate answers it: the node's certificate and the cluster CA, in PEM.
type AgentCertificate struct {
	Certificate string `json:"certificate"`
	CA          string `json:"ca"`
}

// AgentEvent is the body of POST /v1/agent/nodes/{name}/events: something about the
// node an operator must see (its load-balancer group's HAProxy refused a
// configuration), recorded as an event of the node; or, with Kind, Namespace and Name,
// about a service of the node's load-balancer group (a port of it the node cannot
// listen on), recorded as an event of that service, or about a task group the node runs
// (a lifecycle hook that failed), recorded as an event of the task group's owner; the
// owners see them.
type AgentEvent struct {
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Kind      Kind   `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// MaxAgentEventMessage bounds an agent event's message.
const MaxAgentEventMessage = 4096

var agentEventReason = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

// Validate checks an agent event, naming the fields at fault.
func (e AgentEvent) Validate() error {
	var errs FieldErrors
	oneOf("type", e.Type, &errs, EventNormal, EventWarning)
	if !agentEventReason.MatchString(e.Reason) {
		errs.add("reason", "must be a word in CamelCase of at most 64 letters and digits, got %q", truncate(e.Reason, 80))
	}
	if e.Message == "" || len(e.Message) > MaxAgentEventMessage {
		errs.add("message", "required, at most %d bytes, got %d", MaxAgentEventMessage, len(e.Message))
	}
	if e.Kind != "" || e.Namespace != "" || e.Name != "" {
		// An agent speaks of its node, of a service of its load-balancer group or of a
		// task group it runs.
		oneOf("kind", string(e.Kind), &errs, string(KindService), string(KindTaskGroup))
		if e.Namespace != DefaultNamespace {
			checkName("namespace", e.Namespace, &errs)
		}
		if e.Kind == KindTaskGroup {
			checkTaskGroupID("name", e.Name, &errs)
		} else {
			checkName("name", e.Name, &errs)
		}
	}
	return errs.OrNil()
}
