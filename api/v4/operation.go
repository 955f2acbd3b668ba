package v4

import (
	"encoding/json"
	"time"
)

// Operation types: long-running changes of one object that must not interleave.
const (
	OpScale   = "scale"
	OpRollout = "rollout"
	OpUndo    = "undo"
	OpDrain   = "drain"
	OpMove    = "move"
	OpDelete  = "delete"
	// OpReplace replaces a workload's instances that do not run its stored pod template,
	// one move after another (docs/lifecycle.md, "Replacing instances").
	OpReplace = "replace"
)

// Operation is a change of one object that berth carries out asynchronously (a scale, a
// rollout, a drain). One runs per object at a time: a conflicting request gets 423 Locked
// until it ends, as deployd answered while a pod group was being upgraded.
type Operation struct {
	Type    string    `json:"type"`
	Kind    Kind      `json:"kind"`
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	// Message says what the operation does ("scale from 3 to 5").
	Message string `json:"message,omitempty"`
	// Target names the part of the object the operation is about: the task group a
	// move moves.
	Target string `json:"target,omitempty"`
	// Instances is how many of the first instances a replace replaces; absent for every
	// one.
	Instances *int `json:"instances,omitempty"`
}

// ReplaceRequest is the body of POST .../{applications|processes}/{name}/replace.
type ReplaceRequest struct {
	// Instances replaces the first N instances (by index); absent for every one.
	Instances *int `json:"instances,omitempty"`
	// Force replaces the instances of a stateful workload too (each is moved).
	Force bool `json:"force,omitempty"`
}

// Accepted is the answer to a request that started an operation (HTTP 202): the object as
// stored, the operation, and the URL that streams the object's changes until it is done.
type Accepted struct {
	Object    json.RawMessage `json:"object"`
	Operation *Operation      `json:"operation,omitempty"`
	Watch     string          `json:"watch"`
}

// ControlledByAnnotation marks an object a controller owns, as "{kind}/{name}" (the
// applications a deployment rolls between). Users change the owner, not the object:
// operations on it are refused with 423.
const ControlledByAnnotation = "berth.io/controlled-by"
