package cli

import v4 "github.com/berthhq/berth/api/v4"

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

// nominated lists the instances waiting for the victims of their preemption.
func (d *describer) nominated(noms []v4.Nomination) {
	for _, n := range noms {
		d.kv("Preempting", "instance %d on %s, waiting for %d task groups to stop (since %s)", n.Index, n.Node,
			len(n.Victims), n.At.UTC().Format("15:04:05"))
	}
}
