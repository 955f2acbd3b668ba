package sim

import (
	"fmt"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// What the cluster benchmark asserts of the task groups the server reports, under load:
// every instance of every process exists exactly once and runs.

// ownerKey names one process: its namespace and name.
type ownerKey struct{ ns, name string }

// InstanceCheck is what checkInstances found.
type InstanceCheck struct {
	Expected int // instances the processes ask for
	Running  int // of them, with exactly one live task group, Running
	// Missing instances have no live task group; Duplicated ones more than one;
	// NotRunning ones one that is not Running; Extra task groups have an index beyond
	// their process's count.
	Missing, Duplicated, NotRunning, Extra int
	// Details names the first few problems.
	Details []string
}

// maxDetails bounds the problems named one by one.
const maxDetails = 10

// OK reports whether every instance runs exactly once.
func (c *InstanceCheck) OK() bool {
	return c.Missing == 0 && c.Duplicated == 0 && c.NotRunning == 0 && c.Extra == 0 && c.Running == c.Expected
}

func (c *InstanceCheck) String() string {
	if c.OK() {
		return fmt.Sprintf("%d instances, each exactly once and Running", c.Expected)
	}
	return fmt.Sprintf("%d instances: %d Running, %d missing, %d duplicated, %d not Running, %d task groups beyond their process's count (%s)",
		c.Expected, c.Running, c.Missing, c.Duplicated, c.NotRunning, c.Extra, strings.Join(c.Details, "; "))
}

func (c *InstanceCheck) detail(f string, a ...any) {
	if len(c.Details) < maxDetails {
		c.Details = append(c.Details, fmt.Sprintf(f, a...))
	}
}

// live reports whether tg stands for its instance: not to stop, not ended, not Lost (a
// Lost one's replacement does).
func live(tg *v4.TaskGroup) bool {
	return tg.Spec.Desired != v4.DesiredStopped && !v4.Terminal(tg.Status.Phase) && tg.Status.Phase != v4.StatusLost
}

// checkInstances checks the task groups of the processes of want (each's instance
// count) among tgs: each index from 0 has exactly one live task group, Running. Task
// groups bound to a node of skip (frozen on purpose) are left out.
func checkInstances(tgs []*v4.TaskGroup, want map[ownerKey]int, skip map[string]bool) *InstanceCheck {
	type inst struct {
		owner ownerKey
		index int
	}
	byInst := map[inst][]*v4.TaskGroup{}
	res := &InstanceCheck{}
	for _, tg := range tgs {
		owner := ownerKey{tg.Metadata.Namespace, tg.Spec.Owner.Name}
		n, ok := want[owner]
		if !ok || tg.Spec.Owner.Kind != v4.KindProcess || skip[tg.Spec.Node] || !live(tg) {
			continue
		}
		if tg.Spec.Index < 0 || tg.Spec.Index >= n {
			res.Extra++
			res.detail("%s/%s: index %d of a process of %d instances", tg.Metadata.Namespace, tg.Metadata.Name, tg.Spec.Index, n)
			continue
		}
		k := inst{owner, tg.Spec.Index}
		byInst[k] = append(byInst[k], tg)
	}
	// In a stable order, so that the details name the same problems run after run.
	owners := make([]ownerKey, 0, len(want))
	for o := range want {
		owners = append(owners, o)
	}
	slices.SortFunc(owners, func(a, b ownerKey) int { return strings.Compare(a.ns+"/"+a.name, b.ns+"/"+b.name) })
	for _, o := range owners {
		for i := range want[o] {
			res.Expected++
			got := byInst[inst{o, i}]
			switch {
			case len(got) == 0:
				res.Missing++
				res.detail("%s/%s instance %d: no task group", o.ns, o.name, i)
			case len(got) > 1:
				res.Duplicated++
				var names []string
				for _, tg := range got {
					names = append(names, fmt.Sprintf("%s on %s (%s)", tg.Metadata.Name, tg.Spec.Node, tg.Status.Phase))
				}
				res.detail("%s/%s instance %d: %d task groups: %s", o.ns, o.name, i, len(got), strings.Join(names, ", "))
			case got[0].Status.Phase != v4.StatusRunning:
				res.NotRunning++
				res.detail("%s/%s instance %d: %s is %q on %s", o.ns, o.name, i, got[0].Metadata.Name, got[0].Status.Phase, got[0].Spec.Node)
			default:
				res.Running++
			}
		}
	}
	return res
}

// lostOthers are the nodes of nodes that are Lost, leaving out those of frozen.
func lostOthers(nodes []*v4.Node, frozen map[string]bool) []string {
	var lost []string
	for _, n := range nodes {
		if n.Status.Phase == v4.NodeLost && !frozen[n.Metadata.Name] {
			lost = append(lost, n.Metadata.Name)
		}
	}
	slices.Sort(lost)
	return lost
}

// serverRunning counts the task groups of tgs the server has Running, leaving out those
// bound to a node of skip.
func serverRunning(tgs []*v4.TaskGroup, skip map[string]bool) int {
	c := 0
	for _, tg := range tgs {
		if tg.Status.Phase == v4.StatusRunning && !skip[tg.Spec.Node] {
			c++
		}
	}
	return c
}

// namesList names at most maxDetails of names, and how many more.
func namesList(names []string) string {
	if len(names) <= maxDetails {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxDetails], ", "), len(names)-maxDetails)
}
