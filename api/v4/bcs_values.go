package v4

import (
	"fmt"
	"strconv"
	"strings"
)

// readBCSValues rewrites, before the defaults, the values that BCS accepted and read its
// own way, each with a warning that says how berth reads it (docs/compat.md, "Values"):
// a network type other than cni is cnm; a health check without a type is dropped; one
// whose timeout is not below its interval runs; a local check after the first is dropped;
// an image pull policy other than Always is
// IfNotPresent, and so is any process URI's (BCS's types lack the key); a service's type
// and BCSBALANCE label, which BCS never checked, are read as one value berth knows
// (readServiceValues).
func readBCSValues(obj Object) []Warning {
	var warns []Warning
	if d, ok := obj.(*Deployment); ok && strings.EqualFold(strings.TrimSpace(d.Spec.Strategy.Type), "ForceUpdate") {
		warns = append(warns, Warning{Field: "spec.strategy.type",
			Message: `"ForceUpdate" is read as "Recreate" (BCS honoured it only through Kubernetes' API: every old instance stops, then the new ones start)`})
		d.Spec.Strategy.Type = StrategyRecreate
	}
	if s, ok := obj.(*Service); ok {
		warns = append(warns, readServiceValues(s)...)
	}
	warns = append(warns, readDataText(obj)...) // bcs_datatext.go
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
		c := &p.Containers[i]
		// BCS took no alternative: any value but Always was IfNotPresent.
		if _, _, ok := readAlternatives(c.ImagePullPolicy, PullIfNotPresent, PullAlways, PullIfNotPresent); ok {
			warns = append(warns, Warning{Field: fmt.Sprintf("%s.containers[%d].imagePullPolicy", path, i), Message: fmt.Sprintf(
				"%q is read as %q (BCS pulled the image only when it was missing for any value but \"Always\")", truncate(c.ImagePullPolicy, 60), PullIfNotPresent)})
			c.ImagePullPolicy = PullIfNotPresent
		}
	}
	for i := range p.Processes {
		for j := range p.Processes[i].URIs {
			u := &p.Processes[i].URIs[j]
			if _, _, ok := readAlternatives(u.PullPolicy, PullIfNotPresent, PullAlways, PullIfNotPresent); ok {
				warns = append(warns, Warning{Field: fmt.Sprintf("%s.processes[%d].uris[%d].pullPolicy", path, i, j), Message: fmt.Sprintf(
					"%q is read as %q, berth's default (BCS's types have no pullPolicy: its decoder dropped the key)", truncate(u.PullPolicy, 60), PullIfNotPresent)})
				u.PullPolicy = PullIfNotPresent
			}
		}
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
// after the previous one ended. A local check (HTTP, TCP, COMMAND) after the first is
// dropped, with a warning: BCS's scheduler ran only the first.
func dropUntypedChecks(path string, checks []HealthCheck, warns *[]Warning) []HealthCheck {
	var kept []HealthCheck
	local := -1 // the index of the first local check
	for i, hc := range checks {
		if strings.TrimSpace(hc.Type) == "" {
			*warns = append(*warns, Warning{Field: fmt.Sprintf("%s[%d]", path, i), Message: "has no type and is dropped, as BCS did"})
			continue
		}
		if t := canon(hc.Type, CheckHTTP, CheckTCP, CheckCommand); t == CheckHTTP || t == CheckTCP || t == CheckCommand {
			if local >= 0 {
				*warns = append(*warns, Warning{Field: fmt.Sprintf("%s[%d]", path, i), Message: fmt.Sprintf(
					"is dropped: a task runs one local check (HTTP, TCP or COMMAND), %s[%d] here, as BCS's scheduler ran only the first", path, local)})
				continue
			}
			local = i
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

// readServiceValues reads a service's type and its BCSBALANCE label, which BCS stored
// without a check: its templates write them as lists of alternatives ("ClusterIP|NodePort",
// "roundrobin|source|leastconn"). Each is read as its first alternative berth knows, or
// berth's default when none is, with a warning.
func readServiceValues(s *Service) []Warning {
	var warns []Warning
	if t, why, ok := readAlternatives(s.Spec.Type, "ClusterIP", "ClusterIP", "None"); ok {
		warns = append(warns, Warning{Field: "spec.type", Message: fmt.Sprintf(
			"%q is read as %q (%s; BCS never checked a service's type)", truncate(s.Spec.Type, 60), t, why)})
		s.Spec.Type = t
	}
	v, set := s.Metadata.Labels[BalanceLabel]
	if b, why, ok := readAlternatives(v, BalanceRoundRobin, BalanceRoundRobin, BalanceSource, BalanceLeastConn); set && ok {
		warns = append(warns, Warning{Field: "metadata.labels." + BalanceLabel, Message: fmt.Sprintf(
			"%q is read as %q (%s; BCS's load balancer never checked it)", truncate(v, 60), b, why)})
		s.Metadata.Labels[BalanceLabel] = b
	}
	return warns
}

// readAlternatives reads v, which must be one of known (any case): ok is false when it is
// one, or empty. Otherwise it is read as the first of its '|'-separated alternatives
// that is one of known, else as def, and why says which.
func readAlternatives(v, def string, known ...string) (read, why string, ok bool) {
	t := strings.TrimSpace(v)
	if t == "" {
		return "", "", false
	}
	for _, k := range known {
		if strings.EqualFold(t, k) {
			return "", "", false
		}
	}
	if strings.Contains(t, "|") {
		for alt := range strings.SplitSeq(t, "|") {
			for _, k := range known {
				if strings.EqualFold(strings.TrimSpace(alt), k) {
					return k, "a list of alternatives, as BCS's templates write it: berth takes the first it knows", true
				}
			}
		}
	}
	return def, fmt.Sprintf("berth knows %s only, and reads any other value as the default", quoteAll(known)), true
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
