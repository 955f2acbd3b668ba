package v4

// The scheduling fields of workflows (and the workflow specs of cronworkflows and
// workflow templates) and of daemonsets: the same class, priority and policy as a
// workload's (priority.go), with what does not apply to them refused.

// defaultWfScheduling moves Argo's spec.podPriorityClassName to spec.priorityClassName;
// when both are set and differ, both stay for Validate to refuse.
func defaultWfScheduling(s *WorkflowSpec) {
	switch s.PodPriorityClassName {
	case "":
	case s.PriorityClassName:
		s.PodPriorityClassName = ""
	default:
		if s.PriorityClassName == "" {
			s.PriorityClassName, s.PodPriorityClassName = s.PodPriorityClassName, ""
		}
	}
}

// validateWfScheduling checks a workflow spec's class, priority, policy and tier.
func validateWfScheduling(s *WorkflowSpec, errs *FieldErrors) {
	*errs = append(*errs, ValidateScheduling(&s.Scheduling, "spec")...)
	if s.PodPriorityClassName != "" {
		errs.add("spec.podPriorityClassName", "names %q but spec.priorityClassName names %q: set one of them (podPriorityClassName is Argo's spelling of priorityClassName)",
			truncate(s.PodPriorityClassName, 80), truncate(s.PriorityClassName, 80))
	}
	if s.DisruptionBudget != nil {
		errs.add("spec.disruptionBudget", "a workflow's steps are never preemption victims: leave it out")
	}
}

// validateDaemonsetScheduling checks a daemonset's class, priority and policy; it has
// no tier (a daemon serves its node) and no budget (it is never a victim).
func validateDaemonsetScheduling(s *Scheduling, errs *FieldErrors) {
	*errs = append(*errs, ValidateScheduling(s, "spec")...)
	if s.Tier != "" {
		errs.add("spec.tier", "a daemonset has no tier: its daemons are guaranteed on their nodes; leave it out")
	}
	if s.DisruptionBudget != nil {
		errs.add("spec.disruptionBudget", "a daemonset's task groups are never preemption victims: leave it out")
	}
}
