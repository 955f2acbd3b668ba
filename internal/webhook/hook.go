// Package webhook calls admission webhooks (docs/policy.md, "Admission webhooks"): it
// compiles the cluster's configurations into hooks, chooses the ones a write matches
// (operation, kind, namespace, labels), calls them over HTTPS with a review and applies a
// mutating hook's JSON patch (RFC 6902). A hook is someone else's server: every call is
// bounded in time, in answer size and in how many run at once, and a patch may not
// rename or move the object. What the server does with the result (decoding the patched
// object again, checking the user's rights on it) is the caller's.
package webhook

import (
	"crypto/x509"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Hook is one compiled webhook of a configuration.
type Hook struct {
	// Config and Name name it; ID is "config/name".
	Config, Name string
	URL          string
	// Pool verifies the hook's certificate: its caBundle, nil for the cluster CA.
	Pool     *x509.CertPool
	bundle   string
	Mutating bool
	Reinvoke bool
	// Ignore lets a write through when the call fails (failurePolicy Ignore).
	Ignore  bool
	Timeout time.Duration

	ops    []string // CREATE, UPDATE, DELETE or "*"
	kinds  []string // kinds and globs; "*" matches all
	ns     []nsRule // every one must hold
	labels []labelReq
}

// ID names the hook in messages, metrics and events.
func (h *Hook) ID() string { return h.Config + "/" + h.Name }

// Attributes are what a write is matched on.
type Attributes struct {
	Operation string // CREATE, UPDATE or DELETE
	Kind      v4.Kind
	Namespace string
	// Labels are the written object's, OldLabels the stored one's (nil when none).
	Labels, OldLabels map[string]string
}

// Compile turns configurations into hooks: the mutating ones, then the validating ones,
// each in the order they are called (configurations by name, hooks in their list's order,
// which is BCS's chain order). A hook whose caBundle does not parse is left out (its
// configuration was validated when written, so it never is).
func Compile(configs []*v4.AdmissionWebhook) (mutating, validating []*Hook) {
	sorted := slices.Clone(configs)
	slices.SortFunc(sorted, func(a, b *v4.AdmissionWebhook) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	for _, c := range sorted {
		for i := range c.Hooks() {
			w := &c.Hooks()[i]
			h, ok := compileHook(c, w)
			if !ok {
				continue
			}
			if h.Mutating {
				mutating = append(mutating, h)
			} else {
				validating = append(validating, h)
			}
		}
	}
	return mutating, validating
}

func compileHook(c *v4.AdmissionWebhook, w *v4.Webhook) (*Hook, bool) {
	h := &Hook{Config: c.Metadata.Name, Name: w.Name, URL: w.ClientConfig.URL, bundle: w.ClientConfig.CABundle,
		Mutating: c.HookType(w) == v4.WebhookMutating, Reinvoke: w.ReinvocationPolicy == v4.ReinvokeIfNeeded,
		Ignore: w.Ignores(), Timeout: w.Timeout()}
	if h.bundle != "" {
		pool, err := v4.WebhookCAPool(h.bundle)
		if err != nil {
			return nil, false
		}
		h.Pool = pool
	}
	if ref := c.ResourcesRef; ref != nil {
		h.ops = []string{v4.WebhookOperation(ref.Operation)}
		h.kinds = []string{kindName(ref.Kind)}
	}
	for _, r := range w.Rules {
		for _, op := range r.Operations {
			h.ops = append(h.ops, v4.WebhookOperation(op))
		}
		for _, k := range append(slices.Clone(r.Kinds), r.Resources...) {
			h.kinds = append(h.kinds, kindName(k))
		}
	}
	h.ns = compileNamespaces(w.NamespaceSelector)
	if s := w.ObjectSelector; s != nil {
		h.labels = compileLabels(s.MatchLabels, s.MatchExpressions)
	}
	return h, true
}

// kindName is a rule's kind as the kind it names ("apps" is application), or the glob.
func kindName(k string) string {
	k = strings.TrimSuffix(strings.ToLower(k), "/*")
	if kind, err := v4.ParseKind(k); err == nil {
		return string(kind)
	}
	return k
}

// Matches reports whether the hook applies to a write.
func (h *Hook) Matches(a Attributes) bool {
	if !slices.ContainsFunc(h.ops, func(op string) bool { return op == "*" || op == a.Operation }) {
		return false
	}
	if !slices.ContainsFunc(h.kinds, func(k string) bool { return globMatch(k, string(a.Kind)) || globMatch(k, a.Kind.Plural()) }) {
		return false
	}
	for _, r := range h.ns {
		if !r.matches(a.Namespace) {
			return false
		}
	}
	if len(h.labels) == 0 {
		return true
	}
	// An update matches on either its new labels or its old ones (as in Kubernetes), so a
	// write cannot escape a hook by removing the label it is selected by.
	return matchLabels(h.labels, a.Labels) || (a.OldLabels != nil && matchLabels(h.labels, a.OldLabels))
}

func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

// nsRule is one condition on the namespace's name: in (or not in) a list of globs.
type nsRule struct {
	not    bool
	values []string
}

func (r nsRule) matches(ns string) bool {
	in := slices.ContainsFunc(r.values, func(v string) bool { return globMatch(v, ns) })
	return in != r.not
}

func compileNamespaces(s *v4.WebhookNamespaceSelector) []nsRule {
	if s == nil {
		return nil
	}
	var out []nsRule
	if s.Operator != "" {
		out = append(out, nsRule{not: s.Operator == "NotIn", values: s.Values})
	}
	if v, ok := s.MatchLabels[v4.NamespaceNameLabel]; ok {
		out = append(out, nsRule{values: []string{v}})
	}
	for _, e := range s.MatchExpressions {
		switch e.Operator {
		case "In", "NotIn":
			out = append(out, nsRule{not: e.Operator == "NotIn", values: e.Values})
		case "DoesNotExist": // every namespace has its name label
			out = append(out, nsRule{})
		}
	}
	return out
}

// labelReq is one requirement of an object selector.
type labelReq struct {
	key, op string
	values  []string
}

func compileLabels(match map[string]string, exprs []v4.WebhookLabelSelectorReq) []labelReq {
	var out []labelReq
	for _, k := range slices.Sorted(maps.Keys(match)) {
		out = append(out, labelReq{key: k, op: "In", values: []string{match[k]}})
	}
	for _, e := range exprs {
		out = append(out, labelReq{key: e.Key, op: e.Operator, values: e.Values})
	}
	return out
}

func matchLabels(reqs []labelReq, labels map[string]string) bool {
	for _, r := range reqs {
		v, has := labels[r.key]
		var ok bool
		switch r.op {
		case "In":
			ok = has && slices.Contains(r.values, v)
		case "NotIn":
			ok = !has || !slices.Contains(r.values, v)
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}
