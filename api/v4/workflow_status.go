package v4

import "time"

// The phases of a workflow and of its nodes (Argo's names).
const (
	WfPending   = "Pending"
	WfRunning   = "Running"
	WfSucceeded = "Succeeded"
	WfFailed    = "Failed"
	WfError     = "Error"
	WfSkipped   = "Skipped"
	WfOmitted   = "Omitted"
)

// The types of workflow nodes.
const (
	WfNodePod       = "Pod"       // a container, process or script: one task group
	WfNodeSteps     = "Steps"     // a steps template
	WfNodeStepGroup = "StepGroup" // one group of a steps template
	WfNodeDAG       = "DAG"       // a dag template
	WfNodeTaskGroup = "TaskGroup" // a step or task with a loop: its items are children
	WfNodeRetry     = "Retry"     // a template with a retryStrategy: its attempts are children
	WfNodeSkipped   = "Skipped"   // a step whose when was false
	WfNodeSuspend   = "Suspend"
)

// WorkflowStatus is what berth knows of a workflow's run.
type WorkflowStatus struct {
	// UID names this workflow object (not an earlier one of the same name) in its node
	// IDs: chosen by berth before its first step starts, and kept.
	UID        string    `json:"uid,omitempty"`
	Phase      string    `json:"phase,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Message    string    `json:"message,omitempty"`
	// Nodes are the workflow's nodes by ID, while they are small; past a size the
	// controller keeps them outside the object, one key per node (NodesOffloaded), and
	// GET .../workflows/{name}/nodes pages them either way (docs/workflows.md).
	Nodes map[string]WfNodeStatus `json:"nodes,omitempty"`
	// NodesOffloaded says the nodes are kept outside the object.
	NodesOffloaded bool `json:"nodesOffloaded,omitempty"`
	// Progress is "done/total" of the workflow's steps (Pod nodes).
	Progress string `json:"progress,omitempty"`
	// NodeCounts counts the nodes by phase.
	NodeCounts map[string]int `json:"nodeCounts,omitempty"`
	// RetryCount counts the retries of the workflow (`berth workflow retry`): a step
	// run again after one gets a task group of its own, beside its earlier one.
	RetryCount int `json:"retryCount,omitempty"`
	// Nominated are the steps waiting for the victims of their preemption to stop
	// (docs/policy.md, "Priorities and preemption"), by Nomination.Step: at most
	// MaxNominations, each dropped once its step is placed or its wait expired.
	Nominated []Nomination `json:"nominated,omitempty"`
}

// WfNodeStatus is one node of a workflow: a template called at one place, one item of a
// loop, or one attempt of a retried template.
type WfNodeStatus struct {
	// ID is stable: a hash of the workflow's UID, the node's path and attempt
	// (internal/workflow/engine), so a new leader finds the node it would have made.
	ID string `json:"id"`
	// Name is the node's path ("wf.main[0].train(1:b)"); DisplayName its last part.
	Name         string         `json:"name"`
	DisplayName  string         `json:"displayName,omitempty"`
	Type         string         `json:"type"`
	Phase        string         `json:"phase,omitempty"`
	TemplateName string         `json:"templateName,omitempty"`
	TemplateRef  *WfTemplateRef `json:"templateRef,omitempty"`
	// BoundaryID is the steps or dag node the node belongs to.
	BoundaryID string     `json:"boundaryID,omitempty"`
	Children   []string   `json:"children,omitempty"`
	Inputs     *WfInputs  `json:"inputs,omitempty"`
	Outputs    *WfOutputs `json:"outputs,omitempty"`
	StartedAt  time.Time  `json:"startedAt,omitzero"`
	FinishedAt time.Time  `json:"finishedAt,omitzero"`
	Message    string     `json:"message,omitempty"`
	// Attempt counts the retries of a Retry node's child (0: the first attempt).
	Attempt int `json:"attempt,omitempty"`
	// TaskGroup is the task group running a Pod node.
	TaskGroup string `json:"taskgroup,omitempty"`
}

// Finished reports whether a phase is final.
func WfPhaseFinished(phase string) bool {
	switch phase {
	case WfSucceeded, WfFailed, WfError, WfSkipped, WfOmitted:
		return true
	}
	return false
}
