package cli

import (
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
)

// priority writes a workload's priority, class and disruption budget (docs/policy.md,
// "Priorities and preemption"); nothing for one that has none of them.
func (d *describer) priority(s *v4.Scheduling) {
	if s.Priority == nil && s.PriorityClassName == "" && s.DisruptionBudget == nil {
		return
	}
	class := s.PriorityClassName
	if class == "" {
		class = "default"
	}
	policy := s.PreemptionPolicy
	if policy == "" {
		policy = v4.PreemptLowerPriority
	}
	d.kv("Priority", "%d (%s, %s)", s.PriorityValue(), class, policy)
	if b := s.DisruptionBudget; b != nil {
		d.kv("Disruption Budget", "at most %d unavailable", b.MaxUnavailable)
	}
}

// nominated lists the instances (a job's runs: what is "run") waiting for the victims
// of their preemption; a workflow's steps are named by their node IDs.
func (d *describer) nominated(what string, noms []v4.Nomination) {
	for _, n := range noms {
		who := fmt.Sprintf("%s %d", what, n.Index)
		if n.Step != "" {
			who = "step " + n.Step
		}
		d.kv("Preempting", "%s on %s, waiting for %d task groups to stop (since %s)", who, n.Node,
			len(n.Victims), n.At.UTC().Format("15:04:05"))
	}
}
