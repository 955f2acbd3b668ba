package v4

import "time"

// ArchivedWorkflow is one workflow of the workflow archive (docs/workflows.md, "The
// workflow archive"): the workflow as it was when archived, with every node in
// status.nodes (even those it had offloaded), when it was archived and when it is
// dropped (zero: kept until deleted). In a list the workflow has no spec and no nodes.
type ArchivedWorkflow struct {
	ArchivedAt time.Time `json:"archivedAt"`
	ExpiresAt  time.Time `json:"expiresAt,omitzero"`
	Workflow   *Workflow `json:"workflow"`
}

// SortKey is the entry's place in its namespace's archive: "name/uid".
func (a *ArchivedWorkflow) SortKey() string {
	return a.Workflow.Metadata.Name + "/" + a.Workflow.Status.UID
}

// ArchivedWorkflowListMax is the largest page of the archive's list route.
const ArchivedWorkflowListMax = 1000

// ArchivedWorkflowList is a page of a namespace's archive, in name order; Continue
// gives the next page ("" when none is left).
type ArchivedWorkflowList struct {
	Items    []ArchivedWorkflow `json:"items"`
	Continue string             `json:"continue,omitempty"`
}
