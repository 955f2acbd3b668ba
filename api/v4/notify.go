package v4

import "time"

// KindNotify names callback subscriptions: berth POSTs a JSON message to a URL when
// something goes wrong (a task group failed or was lost, restarts too often, runs
// without an IP, a node was lost). Lain deployd's notify callbacks, with filters and
// retries.
const KindNotify Kind = "notify"

// The events a notify object can subscribe to.
const (
	NotifyTaskGroupFailed       = "taskgroup.failed"
	NotifyTaskGroupLost         = "taskgroup.lost"
	NotifyTaskGroupRestartStorm = "taskgroup.restartStorm"
	NotifyTaskGroupNoIP         = "taskgroup.noIP"
	NotifyNodeLost              = "node.lost"
	NotifyWorkflowSucceeded     = "workflow.succeeded"
	NotifyWorkflowFailed        = "workflow.failed"
	NotifyJobSucceeded          = "job.succeeded"
	NotifyJobFailed             = "job.failed"
)

// NotifyEvents lists every event a notify object can subscribe to.
func NotifyEvents() []string {
	return []string{NotifyTaskGroupFailed, NotifyTaskGroupLost, NotifyTaskGroupRestartStorm, NotifyTaskGroupNoIP, NotifyNodeLost,
		NotifyWorkflowSucceeded, NotifyWorkflowFailed, NotifyJobSucceeded, NotifyJobFailed}
}

// NotifyAllNamespaces in spec.namespaces subscribes to task group events of every namespace.
const NotifyAllNamespaces = "*"

// NotifySubscriberAnnotation names who subscribed: the server sets it on every write of a
// notify to the writer's token ("berth-acl-<id>", or NotifyAnonymous), over any value the
// writer sent, and the notify controller sends only what that token may read at the time
// of sending (docs/notify.md, "Who receives what").
const NotifySubscriberAnnotation = "berth.io/notify-subscriber"

// NotifyAnonymous is the subscriber of a notify written without a token (with what the
// anonymous policy grants).
const NotifyAnonymous = "anonymous"

// Notify defaults and limits.
const (
	DefaultNotifyTimeout    = 10 // seconds
	DefaultNotifyMaxRetries = 5
	MaxNotifyTimeout        = 300
	MaxNotifyRetries        = 10
)

// Notify is a callback subscription.
type Notify struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     NotifySpec `json:"spec"`
	// Status is written by berth's notify controller; what users send is ignored.
	Status NotifyStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (n *Notify) GetMeta() *ObjectMeta { return &n.Metadata }

// NotifySpec says where to POST and what for.
type NotifySpec struct {
	// URL is the http or https callback.
	URL string `json:"url"`
	// Events filters what is sent (NotifyEvents); empty means all of them.
	Events []string `json:"events,omitempty"`
	// Namespaces whose task group events are sent; empty means the notify's own, "*"
	// every namespace. Node events have no namespace and are sent regardless.
	Namespaces []string `json:"namespaces,omitempty"`
	// Headers are added to every request (an Authorization token, for instance).
	Headers map[string]string `json:"headers,omitempty"`
	// TimeoutSeconds bounds one attempt (default 10).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// MaxRetries is how many times a failed delivery is tried again, after 1 s, 2 s,
	// 4 s... (default 5; 0 sends once).
	MaxRetries *int `json:"maxRetries,omitempty"`
}

// NotifyStatus counts deliveries and keeps the last success and the last failure.
type NotifyStatus struct {
	Delivered int `json:"delivered,omitempty"`
	// Failed counts deliveries given up after every retry (or dropped: queue full).
	Failed       int             `json:"failed,omitempty"`
	LastDelivery *NotifyDelivery `json:"lastDelivery,omitempty"`
	LastFailure  *NotifyDelivery `json:"lastFailure,omitempty"`
}

// NotifyDelivery is the outcome of one message: delivered, or given up.
type NotifyDelivery struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`   // NotifyTaskGroupFailed, ...
	Subject  string    `json:"subject"` // what it was about: namespace/name or the node
	Attempts int       `json:"attempts"`
	// Code is the last HTTP status answered (0: no answer); Error why it failed.
	Code  int    `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// NotifyMessage is the JSON body berth POSTs to a callback.
type NotifyMessage struct {
	// ID identifies the event: a retried delivery carries the same ID, so a receiver can
	// drop duplicates.
	ID        string    `json:"id"`
	Type      string    `json:"type"`  // NotifyTaskGroupFailed, ...
	Level     string    `json:"level"` // the event's type: Warning
	Namespace string    `json:"namespace,omitempty"`
	Kind      Kind      `json:"kind,omitempty"`
	Name      string    `json:"name,omitempty"`
	TaskGroup string    `json:"taskgroup,omitempty"`
	Node      string    `json:"node,omitempty"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Time      time.Time `json:"time"`
	// Notify names the subscription that sent it (namespace/name).
	Notify string `json:"notify"`
}
