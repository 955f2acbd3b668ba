package v4

import (
	"fmt"
	"strings"
)

// readBCSValues rewrites, before the defaults, the values that BCS accepted and read its
// own way, each with a warning that says how berth reads it (docs/compat.md, "Values"):
// a network type other than cni is cnm; a health check without a type is dropped; one
// whose timeout is not below its interval runs.
func readBCSValues(obj Object) []Warning {
	var warns []Warning
	if d, ok := obj.(*Deployment); ok && strings.EqualFold(strings.TrimSpace(d.Spec.Strategy.Type), "ForceUpdate") {
		warns = append(warns, Warning{Field: "spec.strategy.type",
			Message: `"ForceUpdate" is read as "Recreate" (BCS honoured it only through Kubernetes' API: every old instance stops, then the new ones start)`})
		d.Spec.Strategy.Type = StrategyRecreate
	}
	p := PodSpecOf(obj)
	if p == nil {
		return warns
	}
	const path = "spec.template.spec"
	if t := strings.ToLower(strings.TrimSpace(p.NetworkType)); t != "" && t != "cnm" && t != "cni" {
		warns = append(warns, Warning{Field: path + ".networktype",
			Message: fmt.Sprintf("%q is read as \"cnm\" (BCS's executor ran every network type but cni as cnm)", truncate(p.NetworkType, 40))})
		p.NetworkType = "cnm"
	}
	for i := range p.Containers {
		p.Containers[i].HealthChecks = dropUntypedChecks(fmt.Sprintf("%s.containers[%d].healthChecks", path, i), p.Containers[i].HealthChecks, &warns)
	}
	for i := range p.Processes {
		p.Processes[i].HealthChecks = dropUntypedChecks(fmt.Sprintf("%s.processes[%d].healthChecks", path, i), p.Processes[i].HealthChecks, &warns)
	}
	return warns
}

// dropUntypedChecks leaves out the health checks without a type, as BCS's scheduler did,
// with a warning for each. A timeout that is not below the interval is kept, with a
// warning: BCS accepted it and its executor then failed every launch ("Interval Seconds
// must larger than Timeout Seconds"); berth runs the check as Mesos would, each probe
// after the previous one ended.
func dropUntypedChecks(path string, checks []HealthCheck, warns *[]Warning) []HealthCheck {
	var kept []HealthCheck
	for i, hc := range checks {
		if strings.TrimSpace(hc.Type) == "" {
			*warns = append(*warns, Warning{Field: fmt.Sprintf("%s[%d]", path, i), Message: "has no type and is dropped, as BCS did"})
			continue
		}
		if hc.IntervalSeconds > 0 && hc.TimeoutSeconds >= hc.IntervalSeconds {
			*warns = append(*warns, Warning{Field: fmt.Sprintf("%s[%d].timeoutSeconds", path, i), Message: fmt.Sprintf(
				"%d is not below intervalSeconds (%d): BCS's executor failed every launch of such a check; berth runs it, each probe after the previous one ended",
				hc.TimeoutSeconds, hc.IntervalSeconds)})
		}
		kept = append(kept, hc)
	}
	return kept
}
