package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// notifyType says which notify event a recorded event is, or "" for none. The sources:
// the application controller (InstanceFailed, InstanceError, InstanceLost, RestartStorm),
// the server's status endpoint (NoIP), the node lifecycle controller (NodeLost), the
// workflow controller (WorkflowSucceeded, WorkflowFailed, WorkflowError) and the job
// controller (JobSucceeded, JobFailed).
func notifyType(e v4.Event) string {
	switch e.Reason {
	case "InstanceFailed", "InstanceError":
		return v4.NotifyTaskGroupFailed
	case "InstanceLost":
		return v4.NotifyTaskGroupLost
	case "RestartStorm":
		return v4.NotifyTaskGroupRestartStorm
	case "NoIP":
		return v4.NotifyTaskGroupNoIP
	case "NodeLost":
		if e.Kind == v4.KindNode {
			return v4.NotifyNodeLost
		}
	case "WorkflowSucceeded", "WorkflowFailed", "WorkflowError":
		if e.Kind != v4.KindWorkflow {
			return ""
		}
		if e.Reason == "WorkflowSucceeded" {
			return v4.NotifyWorkflowSucceeded
		}
		return v4.NotifyWorkflowFailed
	case "JobSucceeded", "JobFailed":
		if e.Kind != v4.KindJob {
			return ""
		}
		if e.Reason == "JobSucceeded" {
			return v4.NotifyJobSucceeded
		}
		return v4.NotifyJobFailed
	}
	return ""
}

// wants reports whether notify n subscribes to events of type typ about e: the type is in
// spec.events (empty: all), and a namespaced event's namespace is in spec.namespaces
// (empty: the notify's own; "*": all). Node events have no namespace and pass.
func wants(n *v4.Notify, typ string, e v4.Event) bool {
	if len(n.Spec.Events) > 0 && !slices.Contains(n.Spec.Events, typ) {
		return false
	}
	if e.Namespace == "" {
		return true
	}
	switch ns := n.Spec.Namespaces; {
	case len(ns) == 0:
		return e.Namespace == n.Metadata.Namespace
	case slices.Contains(ns, v4.NotifyAllNamespaces):
		return true
	default:
		return slices.Contains(ns, e.Namespace)
	}
}

// eventID identifies a recorded event: the same event seen twice (a watch and the list
// that catches up after it broke) has the same ID. Events have nanosecond times, so two
// distinct events of one subject practically never collide.
func eventID(e v4.Event) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s",
		e.Time.UnixNano(), e.Reason, e.Kind, e.Namespace, e.Name, e.TaskGroup, e.Node, e.Message)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// notifyMessage is the body sent for event e of type typ by notify n.
func notifyMessage(n *v4.Notify, typ string, e v4.Event) v4.NotifyMessage {
	node := e.Node
	if node == "" && e.Kind == v4.KindNode {
		node = e.Name
	}
	return v4.NotifyMessage{ID: eventID(e), Type: typ, Level: e.Type, Namespace: e.Namespace, Kind: e.Kind,
		Name: e.Name, TaskGroup: e.TaskGroup, Node: node, Reason: e.Reason, Message: e.Message, Time: e.Time,
		Notify: n.Metadata.Namespace + "/" + n.Metadata.Name}
}

// subject names what a message is about, for the notify's status and events.
func subject(m v4.NotifyMessage) string {
	switch {
	case m.Kind == v4.KindNode:
		return "node " + m.Name
	case m.TaskGroup != "":
		return fmt.Sprintf("%s %s/%s (%s)", m.Kind, m.Namespace, m.Name, m.TaskGroup)
	}
	return fmt.Sprintf("%s %s/%s", m.Kind, m.Namespace, m.Name)
}

// redactURL drops the query of a callback URL for events and logs: it may carry a token.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	u.User = nil
	return u.String()
}
