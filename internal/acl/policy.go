// Package acl is berth's authorization model (docs/security.md, Users and policies):
// policies grant verbs on kinds in namespaces, tokens carry policies, and everything not
// granted is denied. It does no I/O: the store keeps tokens and policies, the server asks
// Allowed.
package acl

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Verbs a rule grants.
const (
	VerbRead  = "read"  // get, list, watch, describe, plan
	VerbWrite = "write" // create, update, apply, delete, rollout, move (implies scale)
	VerbScale = "scale" // change a workload's instance count
	VerbExec  = "exec"  // exec into a task group, run its reload or restart command
	VerbLogs  = "logs"  // read a task group's output
	VerbAdmin = "admin" // the cluster: nodes, engine, etcd, join tokens, users and policies
)

// Verbs lists every verb.
var Verbs = []string{VerbRead, VerbWrite, VerbScale, VerbExec, VerbLogs, VerbAdmin}

// Kinds that are not objects of api/v4 but are named in rules.
const (
	KindEvent   = "event"   // berth's event records
	KindCluster = "cluster" // etcd members, space, recovery, encryption keys, join tokens, users and policies
	KindEngine  = "engine"  // maintenance of the whole engine
	KindMetrics = "metrics" // /metrics
	// KindCustomResourceDefinition is the cluster's custom resource definitions, and
	// KindCustomResource the resources of every definition, in a namespace.
	KindCustomResourceDefinition = "customresourcedefinition"
	KindCustomResource           = "customresource"
	// KindCertificateRequest is the cluster CA's signing requests (berth certificate
	// sign); approving one needs admin on cluster. The admission webhook configurations
	// are v4.KindAdmissionWebhook.
	KindCertificateRequest = "certificaterequest"
)

// AnonymousPolicy is the policy of requests without a token: anonymous access is off
// unless a policy of this name exists.
const AnonymousPolicy = "anonymous"

// Policy is a named list of rules; it grants what any rule grants.
type Policy struct {
	APIVersion string     `json:"apiVersion,omitempty" yaml:"apiVersion,omitempty"`
	Kind       string     `json:"kind" yaml:"kind"`
	Metadata   PolicyMeta `json:"metadata" yaml:"metadata"`
	Rules      []Rule     `json:"rules" yaml:"rules"`
}

// PolicyMeta names a policy.
type PolicyMeta struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
}

// KindPolicy is the kind of a policy document.
const KindPolicy = "acl-policy"

// Rule grants verbs on kinds in namespaces. Namespaces and kinds are globs (path.Match:
// "*", "dev-*"); a kind glob never matches "secret" nor a cluster-wide kind (node,
// cluster, engine, metrics), which a rule must name, so reading secrets and touching the
// cluster are always rights of their own. Namespaces do not apply to cluster-wide kinds.
type Rule struct {
	Namespaces []string `json:"namespaces,omitempty" yaml:"namespaces,omitempty"`
	Kinds      []string `json:"kinds" yaml:"kinds"`
	Verbs      []string `json:"verbs" yaml:"verbs"`
	// Privileges are what workloads written under this rule may do to their node
	// (privilege.go); none by default.
	Privileges []string `json:"privileges,omitempty" yaml:"privileges,omitempty"`
}

// Request is what one API call needs: a verb on a kind in a namespace ("*": every
// namespace; "" for cluster-wide kinds), and for a workload one of its privileges.
type Request struct {
	Verb, Kind, Namespace string
	Privilege             string
}

// String says the request in words, as a refusal names it ("may not read the logs of
// task group in namespace dev"): the verb as what it does, the kind as users say it.
func (r Request) String() string {
	what := verbPhrase(r.Verb, kindWords(r.Kind))
	if r.Privilege != "" {
		what = fmt.Sprintf("%s with the privilege %q", what, r.Privilege)
	}
	if r.Namespace == "" {
		return what
	}
	ns := "namespace " + r.Namespace
	if r.Namespace == "*" {
		ns = "every namespace"
	}
	return fmt.Sprintf("%s in %s", what, ns)
}

// verbPhrase is verb done to kind, in words; read, write and scale read as they are.
func verbPhrase(verb, kind string) string {
	switch verb {
	case VerbLogs:
		return "read the logs of " + kind
	case VerbExec:
		return "run commands in " + kind
	case VerbAdmin:
		return "administer " + kind
	}
	return verb + " " + kind
}

// kindWords is how a message names kind: rules name task groups "taskgroup", users say
// "task group"; the cluster and the engine are "the cluster" and "the engine".
func kindWords(kind string) string {
	switch kind {
	case string(v4.KindTaskGroup):
		return "task group"
	case "namespacequota":
		return "namespace quota"
	case KindCustomResourceDefinition:
		return "custom resource definition"
	case KindCustomResource:
		return "custom resource"
	case KindCluster, KindEngine:
		return "the " + kind
	}
	return kind
}

// ClusterKind reports whether kind has no namespace.
func ClusterKind(kind string) bool {
	switch kind {
	case string(v4.KindNode), KindCluster, KindEngine, KindMetrics, KindCustomResourceDefinition,
		v4.KindAdmissionWebhook, KindCertificateRequest:
		return true
	}
	return false
}

// Allows reports whether the policy grants req.
func (p *Policy) Allows(req Request) bool {
	return slices.ContainsFunc(p.Rules, func(r Rule) bool { return r.allows(req) })
}

func (r Rule) allows(req Request) bool {
	if req.Privilege != "" && !slices.Contains(r.Privileges, req.Privilege) && !slices.Contains(r.Privileges, "*") {
		return false
	}
	if !slices.ContainsFunc(r.Verbs, func(v string) bool { return v == req.Verb || v == "*" || (v == VerbWrite && req.Verb == VerbScale) }) {
		return false
	}
	if !slices.ContainsFunc(r.Kinds, func(k string) bool { return kindMatches(k, req.Kind) }) {
		return false
	}
	if ClusterKind(req.Kind) {
		return true
	}
	if req.Namespace == "*" { // every namespace: only a rule for every namespace
		return slices.Contains(r.Namespaces, "*")
	}
	return slices.ContainsFunc(r.Namespaces, func(ns string) bool { ok, _ := path.Match(ns, req.Namespace); return ok })
}

func kindMatches(glob, kind string) bool {
	if glob == kind {
		return true
	}
	if kind == string(v4.KindSecret) || ClusterKind(kind) {
		return false // secrets and the cluster's own kinds only by name
	}
	ok, _ := path.Match(glob, kind)
	return ok
}

// maxRuleList bounds each list of a rule.
const maxRuleList = 64

var policyNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Validate says what is wrong with a policy, naming each field.
func (p *Policy) Validate() error {
	var errs v4.FieldErrors
	add := func(field, format string, args ...any) {
		errs = append(errs, v4.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if p.Kind != KindPolicy {
		add("kind", "must be %s, got %q", KindPolicy, p.Kind)
	}
	if !policyNamePattern.MatchString(p.Metadata.Name) {
		add("metadata.name", "must be 1-63 lowercase letters, digits and '-', starting with a letter, got %q", truncate(p.Metadata.Name))
	}
	if len(p.Metadata.Description) > 256 {
		add("metadata.description", "at most 256 characters, got %d", len(p.Metadata.Description))
	}
	if len(p.Rules) == 0 || len(p.Rules) > 100 {
		add("rules", "give 1 to 100 rules, got %d", len(p.Rules))
	}
	for i, r := range p.Rules {
		f := fmt.Sprintf("rules[%d]", i)
		// Bounded lists keep a policy small: a cluster keeps up to 1,000 of them.
		for name, n := range map[string]int{"namespaces": len(r.Namespaces), "kinds": len(r.Kinds), "verbs": len(r.Verbs), "privileges": len(r.Privileges)} {
			if n > maxRuleList {
				add(f+"."+name, "at most %d entries, got %d", maxRuleList, n)
			}
		}
		if len(r.Verbs) == 0 {
			add(f+".verbs", "required: some of %s, or *", strings.Join(Verbs, ", "))
		}
		for j, v := range r.Verbs {
			if v != "*" && !slices.Contains(Verbs, v) {
				add(fmt.Sprintf("%s.verbs[%d]", f, j), "unknown verb %q: use %s, or *", truncate(v), strings.Join(Verbs, ", "))
			}
		}
		if len(r.Kinds) == 0 {
			add(f+".kinds", "required: kinds such as process, secret, or *")
		}
		for j, k := range r.Kinds {
			checkGlob(fmt.Sprintf("%s.kinds[%d]", f, j), k, add)
		}
		clusterOnly := !slices.ContainsFunc(r.Kinds, func(k string) bool { return !ClusterKind(k) })
		if len(r.Namespaces) == 0 && !clusterOnly {
			add(f+".namespaces", "required for namespaced kinds: namespaces or globs such as dev-*, or *")
		}
		for j, ns := range r.Namespaces {
			checkGlob(fmt.Sprintf("%s.namespaces[%d]", f, j), ns, add)
		}
		for j, pr := range r.Privileges {
			if pr != "*" && !slices.Contains(Privileges, pr) {
				add(fmt.Sprintf("%s.privileges[%d]", f, j), "unknown privilege %q: use %s, or *", truncate(pr), strings.Join(Privileges, ", "))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func checkGlob(field, glob string, add func(string, string, ...any)) {
	if glob == "" || len(glob) > 63 {
		add(field, "must be 1-63 characters")
		return
	}
	if _, err := path.Match(glob, ""); err != nil {
		add(field, "bad glob %q: %v", truncate(glob), err)
	}
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
