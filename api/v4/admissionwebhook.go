package v4

import "time"

// Admission webhooks (docs/policy.md, "Admission webhooks"): a cluster-wide configuration
// that names HTTPS endpoints the server calls while it admits a write. One document holds
// one or more hooks; it is written in either of two shapes, both kept as written:
//
//   - BCS's AdmissionWebhookConfiguration: resourcesRef {operation, kind} selects the
//     writes, admissionWebhooks lists the chained hooks (failurePolicy, clientConfig,
//     namespaceSelector with operator In/NotIn and values);
//   - Kubernetes' Mutating/ValidatingWebhookConfiguration: webhooks, each with rules of
//     operations and kinds, namespaceSelector, objectSelector, timeoutSeconds,
//     failurePolicy and reinvocationPolicy.
//
// AdmissionWebhook is not one of the kinds of a namespace (kinds.go): it has routes of
// its own under /v1/admissionwebhooks, written by an administrator only.

// KindAdmissionWebhook names the configuration in documents and in ACL rules.
const KindAdmissionWebhook = "admissionwebhook"

// The shapes' kind names a document may carry.
const (
	WebhookKindBCS        = "AdmissionWebhookConfiguration"
	WebhookKindMutating   = "MutatingWebhookConfiguration"
	WebhookKindValidating = "ValidatingWebhookConfiguration"
)

// Webhook types, failure policies, reinvocation policies and operations.
const (
	WebhookMutating   = "Mutating"
	WebhookValidating = "Validating"

	WebhookFail   = "Fail"
	WebhookIgnore = "Ignore"

	ReinvokeNever    = "Never"
	ReinvokeIfNeeded = "IfNeeded"

	AdmitCreate = "CREATE"
	AdmitUpdate = "UPDATE"
	AdmitDelete = "DELETE"
)

// Bounds of a configuration (validation names the field that passes one).
const (
	MaxWebhookConfigs     = 64 // configurations a cluster holds
	MaxWebhooksPerConfig  = 16
	MaxWebhookRules       = 16
	MaxWebhookValues      = 64 // operations, kinds, selector values, labels
	MaxWebhookURLLen      = 2048
	MaxWebhookCABundleLen = 64 << 10
	DefaultWebhookTimeout = 10 // seconds
	MaxWebhookTimeout     = 30
)

// AdmissionWebhook is one configuration of admission webhooks.
type AdmissionWebhook struct {
	APIVersion string      `json:"apiVersion,omitempty"`
	Kind       string      `json:"kind"`
	Metadata   WebhookMeta `json:"metadata"`
	// ResourcesRef and AdmissionWebhooks are BCS's shape: every hook of the list applies
	// to the one operation and kind named.
	ResourcesRef      *WebhookResourcesRef `json:"resourcesRef,omitempty"`
	AdmissionWebhooks []Webhook            `json:"admissionWebhooks,omitempty"`
	// Webhooks is Kubernetes' shape: each hook has its own rules.
	Webhooks []Webhook `json:"webhooks,omitempty"`
}

// WebhookMeta names a configuration. Namespace is accepted from BCS's documents, whose
// configurations lived in a namespace, and ignored: a configuration applies to the
// namespaces its selectors choose.
type WebhookMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp *time.Time        `json:"creationTimestamp,omitempty"`
}

// WebhookResourcesRef is BCS's selection: one operation ("Create", "Update", "Delete",
// any case) of one kind ("application", "deployment", ...).
type WebhookResourcesRef struct {
	Operation string `json:"operation"`
	Kind      string `json:"kind"`
}

// Webhook is one hook.
type Webhook struct {
	Name string `json:"name"`
	// Type is Mutating or Validating; the default is the document's: Mutating for BCS's
	// shape and MutatingWebhookConfiguration, Validating for ValidatingWebhookConfiguration.
	Type         string              `json:"type,omitempty"`
	ClientConfig WebhookClientConfig `json:"clientConfig"`
	// Rules select the writes (Kubernetes' shape); BCS's resourcesRef stands for one.
	Rules             []WebhookRule             `json:"rules,omitempty"`
	NamespaceSelector *WebhookNamespaceSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *WebhookLabelSelector     `json:"objectSelector,omitempty"`
	// TimeoutSeconds bounds one call: default 10, at most 30.
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
	// FailurePolicy is what a failed call (unreachable, timed out, an answer that is not
	// a review) does: Fail (the default) refuses the write, Ignore lets it through.
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// ReinvocationPolicy IfNeeded calls a mutating hook once more when a later one
	// changed the object; Never (the default) does not.
	ReinvocationPolicy string `json:"reinvocationPolicy,omitempty"`
	// Accepted from Kubernetes' documents, and without effect: berth speaks one review
	// version and its hooks have no dry runs.
	SideEffects             string   `json:"sideEffects,omitempty"`
	AdmissionReviewVersions []string `json:"admissionReviewVersions,omitempty"`
	MatchPolicy             string   `json:"matchPolicy,omitempty"`
}

// WebhookClientConfig says where the hook is: an https URL, and the PEM certificates its
// server's certificate is verified against (caBundle; the cluster CA when empty).
// Kubernetes' base64 of the PEM is accepted too.
type WebhookClientConfig struct {
	URL      string `json:"url,omitempty"`
	CABundle string `json:"caBundle,omitempty"`
	// Service is Kubernetes' and BCS's reference to a service; berth calls hooks by URL
	// and refuses it with a message saying so.
	Service *WebhookService `json:"service,omitempty"`
}

// WebhookService is a service reference, refused (see WebhookClientConfig).
type WebhookService struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Path      string `json:"path,omitempty"`
	Port      int    `json:"port,omitempty"`
}

// WebhookRule selects writes by operation (CREATE, UPDATE, DELETE or "*") and kind
// (berth's kinds, their plurals, or globs such as "*"). Kubernetes' resources are read
// as kinds; apiGroups, apiVersions and scope are accepted and not used.
type WebhookRule struct {
	Operations  []string `json:"operations"`
	Kinds       []string `json:"kinds,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	APIGroups   []string `json:"apiGroups,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	Scope       string   `json:"scope,omitempty"`
}

// WebhookNamespaceSelector chooses namespaces by name: BCS's operator In or NotIn with
// values (globs), or Kubernetes' label selector on the one label a berth namespace has,
// kubernetes.io/metadata.name (its name).
type WebhookNamespaceSelector struct {
	Operator         string                    `json:"operator,omitempty"`
	Values           []string                  `json:"values,omitempty"`
	MatchLabels      map[string]string         `json:"matchLabels,omitempty"`
	MatchExpressions []WebhookLabelSelectorReq `json:"matchExpressions,omitempty"`
}

// NamespaceNameLabel is the label every namespace has, its name (as in Kubernetes).
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// WebhookLabelSelector chooses objects by their labels (Kubernetes' LabelSelector).
type WebhookLabelSelector struct {
	MatchLabels      map[string]string         `json:"matchLabels,omitempty"`
	MatchExpressions []WebhookLabelSelectorReq `json:"matchExpressions,omitempty"`
}

// WebhookLabelSelectorReq is one requirement: key with operator In, NotIn, Exists or
// DoesNotExist and values (for In and NotIn).
type WebhookLabelSelectorReq struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Hooks are the configuration's hooks, whichever shape holds them.
func (c *AdmissionWebhook) Hooks() []Webhook {
	if len(c.Webhooks) > 0 {
		return c.Webhooks
	}
	return c.AdmissionWebhooks
}

// HookType is hook i's type, defaulted from the document's kind.
func (c *AdmissionWebhook) HookType(h *Webhook) string {
	if h.Type != "" {
		return h.Type
	}
	if c.Kind == WebhookKindValidating {
		return WebhookValidating
	}
	return WebhookMutating
}

// Timeout is the hook's timeout, defaulted.
func (h *Webhook) Timeout() time.Duration {
	if h.TimeoutSeconds == nil {
		return DefaultWebhookTimeout * time.Second
	}
	return time.Duration(*h.TimeoutSeconds) * time.Second
}

// Ignores reports whether a failed call lets the write through.
func (h *Webhook) Ignores() bool { return h.FailurePolicy == WebhookIgnore }

// AdmissionWebhookList is the answer of GET /v1/admissionwebhooks.
type AdmissionWebhookList struct {
	Items []AdmissionWebhook `json:"items"`
}
