package v4

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"time"
)

// Deployment phases (BCS vocabulary; BCS's "Update" is spelled Updating).
const (
	DeploymentDeploying     = "Deploying"     // first version starting
	DeploymentRunning       = "Running"       // every instance on the current revision
	DeploymentUpdating      = "Updating"      // a rollout is in progress
	DeploymentUpdatePaused  = "UpdatePaused"  // a rollout paused by a user or rollingManually
	DeploymentUpdateSuspend = "UpdateSuspend" // a rollout stopped by berth: a failed instance or a step past its deadline
	DeploymentStopping      = AppStopping     // scaled to 0: instances still stopping
	DeploymentStopped       = AppStopped      // scaled to 0: no instance left; revisions kept
)

// MaxDeploymentHistory is how many revisions a deployment keeps (with their templates).
const MaxDeploymentHistory = 10

// DeploymentStatus is the state of a deployment's rollout. Everything a rollout needs to
// go on (after a restart or on a new leader) is here or in the child applications.
type DeploymentStatus struct {
	Phase string `json:"phase,omitempty"`
	// Paused is the user's intent (berth rollout pause / resume), or set after a step of
	// a rollingManually rollout.
	Paused bool `json:"paused,omitempty"`
	// Revision is the revision of spec.template; its application is "{name}-v{revision}".
	Revision int `json:"revision,omitempty"`
	// Instances is spec.instance; Current how many instances of the current revision are
	// wanted now, CurrentAvailable how many of them are available; Old how many of older
	// revisions are still wanted; Available how many instances of any revision are
	// available (Running, and healthy when the template has health checks).
	Instances        int `json:"instances"`
	Current          int `json:"current"`
	CurrentAvailable int `json:"currentAvailable"`
	Old              int `json:"old"`
	Available        int `json:"available"`
	// Stopped counts the instances stopped on request (spec.stoppedInstances): a rollout
	// counts them available, as they are where the user wants them.
	Stopped int    `json:"stopped,omitempty"`
	Message string `json:"message,omitempty"`
	// LastStep is when the rollout last changed an instance count (steps are
	// upgradeDuration apart; the step deadline counts from it).
	LastStep time.Time `json:"lastStep,omitzero"`
	// Updated is when the status last changed.
	Updated time.Time            `json:"updated,omitzero"`
	History []DeploymentRevision `json:"history,omitempty"`
}

// DeploymentRevision is one version of a deployment's template, kept so `rollout undo`
// can go back to it.
type DeploymentRevision struct {
	Revision int       `json:"revision"`
	Hash     string    `json:"hash"`
	Created  time.Time `json:"created"`
	// Cause says why the revision was made ("created", "template changed", "undo to revision 2").
	Cause    string      `json:"cause,omitempty"`
	Template PodTemplate `json:"template"`
}

// TemplateHash identifies a pod template: equal templates have equal hashes.
func TemplateHash(t *PodTemplate) string {
	b, err := json.Marshal(t)
	if err != nil { // a PodTemplate always encodes; keep a stable answer regardless
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:5])
}

// RevisionOf returns the history entry of revision n, or nil.
func (s *DeploymentStatus) RevisionOf(n int) *DeploymentRevision {
	for i := range s.History {
		if s.History[i].Revision == n {
			return &s.History[i]
		}
	}
	return nil
}

func (s *DeploymentStatus) isZero() bool { return reflect.ValueOf(*s).IsZero() }

// DeploymentHistory is the answer of GET .../deployments/{name}/history: the kept
// revisions, oldest first, and which one spec.template is.
type DeploymentHistory struct {
	Kind    string               `json:"kind"` // "DeploymentHistory"
	Current int                  `json:"current"`
	Items   []DeploymentRevision `json:"items"`
}
