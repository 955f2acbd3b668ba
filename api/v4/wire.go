package v4

import "time"

// Types of the REST API that are not specs, shared by the server and its clients.

// Apply actions reported per object by POST /v1/apply.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
)

// ApplyResult says what apply did with one document.
type ApplyResult struct {
	Kind            Kind   `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Action          string `json:"action"`
	ResourceVersion string `json:"resourceVersion"`
	// Warnings are what the document's author should know (Warning): each is also a
	// Warning header of the answer.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is one of berth's own records of what happened ("process ns-a/web created").
// It is not a watch event.
type Event struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Kind      Kind      `json:"kind,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Message   string    `json:"message"`
	// TaskGroup and Node name the task group and the node an event is about, when it is
	// about one (notify callbacks carry them).
	TaskGroup string `json:"taskgroup,omitempty"`
	Node      string `json:"node,omitempty"`
	// Count is how many times this event happened; repeats of one event (same object,
	// type, reason, message, task group and node) merge into one record. FirstTime and
	// LastTime bound them (LastTime equals Time). Records written before merging existed
	// have none of the three: they stand for one occurrence at Time.
	Count     int       `json:"count,omitempty"`
	FirstTime time.Time `json:"firstTime,omitzero"`
	LastTime  time.Time `json:"lastTime,omitzero"`
}

// Occurrences is how many times e happened: Count, or 1 for a record without one.
func (e Event) Occurrences() int { return max(e.Count, 1) }

// EventFilter selects events; empty fields match everything.
type EventFilter struct {
	Namespace string
	Kind      Kind
	Name      string
}

// Match reports whether e passes the filter.
func (f EventFilter) Match(e Event) bool {
	return (f.Namespace == "" || f.Namespace == e.Namespace) &&
		(f.Kind == "" || f.Kind == e.Kind) &&
		(f.Name == "" || f.Name == e.Name)
}
