package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// depKey names a dependency.
type depKey struct{ Namespace, Name string }

func (k depKey) String() string { return k.Namespace + "/" + k.Name }

// podKey names one shared pod of a dependency: its node and, for the namespace policy, the
// dependents' namespace (empty for the node policy). Every dependency ref resolves its own
// key: deployd let the node policy of one ref leak into the next (a loop variable).
type podKey struct{ node, scope string }

func (k podKey) policy() string {
	if k.scope == "" {
		return v4.DependencyPolicyNode
	}
	return v4.DependencyPolicyNamespace
}

func (k podKey) String() string {
	if k.scope == "" {
		return "node " + k.node
	}
	return "namespace " + k.scope + " on node " + k.node
}

// Annotations on a dependency's task group: which pod it is.
const (
	depPolicyAnnotation = "berth.io/dependency-policy"
	depScopeAnnotation  = "berth.io/dependency-scope"
)

// podKeyOf reads the key of a dependency's task group.
func podKeyOf(tg *v4.TaskGroup) podKey {
	return podKey{node: tg.Spec.Node, scope: tg.Metadata.Annotations[depScopeAnnotation]}
}

// liveDependent reports whether a task group holds a reference: it has not ended and is
// not being stopped. Staging counts (the dependent has just landed on its node) and so
// does Lost (a partitioned agent keeps running its work).
func liveDependent(tg *v4.TaskGroup) bool {
	return tg.Spec.Owner.Kind != v4.KindDependency && tg.Spec.Desired != v4.DesiredStopped && !v4.Terminal(tg.Status.Phase)
}

// depRef is one resolved dependency ref of a task group: the dependency and the pod
// that serves the task group.
type depRef struct {
	dep depKey
	pod podKey
}

// refsOf resolves a task group's dependency refs.
func refsOf(tg *v4.TaskGroup) []depRef {
	var out []depRef
	for _, r := range tg.Spec.Template.Spec.Dependencies {
		ns := r.Namespace
		if ns == "" {
			ns = tg.Metadata.Namespace
		}
		pk := podKey{node: tg.Spec.Node, scope: tg.Metadata.Namespace}
		if strings.EqualFold(r.Policy, v4.DependencyPolicyNode) {
			pk.scope = ""
		}
		out = append(out, depRef{depKey{ns, r.Name}, pk})
	}
	return out
}

// dependents counts, per pod key, the live task groups that declare dep, and lists their
// owners (for the events of a missing dependency).
func dependents(dep depKey, tgs []*v4.TaskGroup) (map[podKey]int, []scheduler.AppKey) {
	counts := map[podKey]int{}
	var owners []scheduler.AppKey
	for _, tg := range tgs {
		if !liveDependent(tg) || tg.Spec.Node == "" {
			continue
		}
		for _, r := range refsOf(tg) {
			if r.dep != dep {
				continue
			}
			counts[r.pod]++
			o := scheduler.AppKey{Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name}
			if !slices.Contains(owners, o) {
				owners = append(owners, o)
			}
		}
	}
	return counts, owners
}

// podsOf groups a dependency's task groups by pod key, oldest first.
func podsOf(dep depKey, tgs []*v4.TaskGroup) map[podKey][]*v4.TaskGroup {
	out := map[podKey][]*v4.TaskGroup{}
	for _, tg := range tgs {
		if tg.Spec.Owner.Kind == v4.KindDependency && tg.Metadata.Namespace == dep.Namespace && tg.Spec.Owner.Name == dep.Name {
			k := podKeyOf(tg)
			out[k] = append(out[k], tg)
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b *v4.TaskGroup) int {
			return a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp)
		})
	}
	return out
}

// podPlan is what one reconcile does for one pod key.
type podPlan struct {
	key  podKey
	refs int
	cur  *v4.TaskGroup // the pod that serves the key (nil when none)
	// remove are stopped gracefully and deleted; why is the event's reason ("Collected",
	// "Replacing", ...) and reason its message ("" for pods already being stopped).
	remove      []*v4.TaskGroup
	why, reason string
	// create starts a pod on the node; attempt is its reschedTimes (restarts).
	create  bool
	attempt int
	// portRetries and taken as restartInfo's (portretry.go).
	portRetries int
	taken       map[string][]int
	// event is a notice to record once for this pod (a back-off, a refused restart).
	event, eventReason string
	// unused is when the key was first seen without dependents (zero while in use).
	unused time.Time
	// wake is when to look again (0: only on events).
	wake time.Duration
}

// planInput is what the decisions depend on; planPods has no other input, so the
// decisions are tested without etcd or clocks.
type planInput struct {
	dep  *v4.Dependency // nil when it was deleted
	refs map[podKey]int
	pods map[podKey][]*v4.TaskGroup
	// unused holds, per key, when it was first seen without dependents.
	unused    map[podKey]time.Time
	now       time.Time
	termStart time.Time
	gc        time.Duration
}

// planPods decides, for every key that has dependents or pods, what to do.
func planPods(in planInput) []podPlan {
	keys := map[podKey]bool{}
	for k, n := range in.refs {
		if n > 0 {
			keys[k] = true
		}
	}
	for k := range in.pods {
		keys[k] = true
	}
	sorted := make([]podKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.SortFunc(sorted, func(a, b podKey) int {
		return strings.Compare(a.node+"\x00"+a.scope, b.node+"\x00"+b.scope)
	})
	out := make([]podPlan, 0, len(sorted))
	for _, k := range sorted {
		out = append(out, planPod(in, k))
	}
	return out
}

func planPod(in planInput, k podKey) podPlan {
	p := podPlan{key: k, refs: in.refs[k]}
	var active []*v4.TaskGroup
	for _, tg := range in.pods[k] {
		if tg.Spec.Desired == v4.DesiredStopped {
			p.remove = append(p.remove, tg) // already stopping: see it through
		} else {
			active = append(active, tg)
		}
	}
	if in.dep == nil {
		p.remove = append(p.remove, active...)
		if len(active) > 0 {
			p.why, p.reason = "Removing", "the dependency was deleted"
		}
		return p
	}
	if len(active) > 1 { // duplicates (a write raced a leader change): keep the newest
		p.remove = append(p.remove, active[:len(active)-1]...)
		p.why, p.reason = "Removing", "duplicate pod"
		active = active[len(active)-1:]
	}
	if len(active) == 1 {
		p.cur = active[0]
	}
	if p.refs == 0 {
		planUnused(in, &p)
		return p
	}
	switch {
	case p.cur == nil:
		// Start one, once the pods being stopped are gone (they may hold the same ports).
		p.create = len(p.remove) == 0
	case !sameTemplate(p.cur.Spec.Template, in.dep.Spec.Template):
		p.remove = append(p.remove, p.cur)
		p.why, p.reason = "Replacing", "the dependency's spec changed: replacing the pod in place"
		p.cur = nil
	case v4.Terminal(p.cur.Status.Phase):
		planEnded(in, &p)
	}
	return p
}

// planUnused handles a key without dependents: the pod is kept for the GC period after
// the last dependent went, and never collected in the first GC period of a leader's term
// (dependents may not all be known yet after a restart).
func planUnused(in planInput, p *podPlan) {
	if p.cur == nil {
		return // nothing runs; nothing to keep
	}
	if v4.Terminal(p.cur.Status.Phase) {
		p.remove = append(p.remove, p.cur)
		p.why, p.reason = "Removing", fmt.Sprintf("the pod is %s and nothing depends on it", p.cur.Status.Phase)
		p.cur = nil
		return
	}
	p.unused = in.unused[p.key]
	if p.unused.IsZero() {
		p.unused = in.now
	}
	due := p.unused.Add(in.gc)
	if termDue := in.termStart.Add(in.gc); termDue.After(due) {
		due = termDue
	}
	if in.now.Before(due) {
		p.wake = due.Sub(in.now)
		return
	}
	p.remove = append(p.remove, p.cur)
	p.why, p.reason = "Collected", fmt.Sprintf("unused since %s (for %s)", p.unused.UTC().Format(time.RFC3339), in.now.Sub(p.unused).Round(time.Second))
	p.cur = nil
}

// planEnded applies the dependency's restart policy to its ended pod.
func planEnded(in planInput, p *podPlan) {
	tg := p.cur
	plan := planRestart(in.dep.RestartPolicy, tg, in.now)
	switch {
	case !plan.restart:
		p.eventReason, p.event = "NotRestarted", fmt.Sprintf("pod %s on %s is %s and stays so: %s", tg.Metadata.Name, tg.Spec.Node, tg.Status.Phase, plan.reason)
	case plan.at.After(in.now):
		wait := plan.at.Sub(in.now)
		p.eventReason, p.event = "BackOff", fmt.Sprintf("pod %s on %s is %s; restarting in %s (restart %d)", tg.Metadata.Name, tg.Spec.Node, tg.Status.Phase, wait.Round(time.Second), plan.attempt)
		p.wake = wait
	default:
		p.remove = append(p.remove, tg)
		p.why, p.reason = "Restarting", fmt.Sprintf("the pod is %s (restart %d)", tg.Status.Phase, plan.attempt)
		if plan.portRetries > 0 {
			p.why, p.reason = "PortConflict", portRetryMessage("pod", tg, plan.portRetries)
		}
		p.cur = nil
		p.create, p.attempt = true, plan.attempt
		p.portRetries, p.taken = plan.portRetries, takenPorts(tg)
	}
}

// sameTemplate compares pod templates by their JSON (what the agent receives).
func sameTemplate(a, b v4.PodTemplate) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// DependentsOf counts the live task groups that declare dependency namespace/name and
// lists their owners: the server refuses to delete a dependency that has any.
func DependentsOf(namespace, name string, tgs []*v4.TaskGroup) (int, []scheduler.AppKey) {
	counts, owners := dependents(depKey{namespace, name}, tgs)
	n := 0
	for _, c := range counts {
		n += c
	}
	return n, owners
}
