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
// an image pull policy other than Always (or berth's Never) is
// IfNotPresent, and so is any process URI's (BCS's types lack the key); a service's type
// and BCSBALANCE label, which BCS never checked, are read as one value berth knows
// (readServiceValues).
func readBCSValues(obj Object, d *decoder) {
	if dep, ok := obj.(*Deployment); ok && strings.EqualFold(strings.TrimSpace(dep.Spec.Strategy.Type), "ForceUpdate") {
		d.warn("spec.strategy.type",
			`"ForceUpdate" is read as "Recreate" (BCS honoured it only through Kubernetes' API: every old instance stops, then the new ones start)`)
		dep.Spec.Strategy.Type = StrategyRecreate
	}
	if s, ok := obj.(*Service); ok {
		readServiceValues(s, d)
	}
	readDataText(obj, d) // bcs_datatext.go
	p := PodSpecOf(obj)
	if p == nil {
		return
	}
	const path = "spec.template.spec"
	if t := strings.ToLower(strings.TrimSpace(p.NetworkType)); t != "" && t != "cnm" && t != "cni" {
		d.warn(path+".networktype", "%q is read as \"cnm\" (BCS's executor ran every network type but cni as cnm)", truncate(p.NetworkType, 40))
		p.NetworkType = "cnm"
	}
	for i := range p.Containers {
		c := &p.Containers[i]
		// BCS took no alternative: any value but Always was IfNotPresent. Never is
		// berth's (Kubernetes'), so it is known.
		if _, _, ok := readAlternatives(c.ImagePullPolicy, PullIfNotPresent, PullAlways, PullIfNotPresent, PullNever); ok {
			d.warn(fmt.Sprintf("%s.containers[%d].imagePullPolicy", path, i),
				"%q is read as %q (BCS pulled the image only when it was missing for any value but \"Always\")", truncate(c.ImagePullPolicy, 60), PullIfNotPresent)
			c.ImagePullPolicy = PullIfNotPresent
		}
	}
	for i := range p.Processes {
		for j := range p.Processes[i].URIs {
			u := &p.Processes[i].URIs[j]
			if _, _, ok := readAlternatives(u.PullPolicy, PullIfNotPresent, PullAlways, PullIfNotPresent); ok {
				d.warn(fmt.Sprintf("%s.processes[%d].uris[%d].pullPolicy", path, i, j),
					"%q is read as %q, berth's default (BCS's types have no pullPolicy: its decoder dropped the key)", truncate(u.PullPolicy, 60), PullIfNotPresent)
				u.PullPolicy = PullIfNotPresent
			}
		}
	}
	for i := range p.Containers {
		p.Containers[i].HealthChecks = dropUntypedChecks(fmt.Sprintf("%s.containers[%d].healthChecks", path, i), p.Containers[i].HealthChecks, d)
	}
	for i := range p.Processes {
		p.Processes[i].HealthChecks = dropUntypedChecks(fmt.Sprintf("%s.processes[%d].healthChecks", path, i), p.Processes[i].HealthChecks, d)
	}
}

// dropUntypedChecks leaves out the health checks without a type, as BCS's scheduler did,
// with a warning for each. A timeout that is not below the interval is kept, with a
// warning: BCS accepted it and its executor then failed every launch ("Interval Seconds
// must larger than Timeout Seconds"); berth runs the check as Mesos would, each probe
// after the previous one ended. A local check (HTTP, TCP, COMMAND) after the first is
// dropped, with a warning: BCS's scheduler ran only the first.
func dropUntypedChecks(path string, checks []HealthCheck, d *decoder) []HealthCheck {
	var kept []HealthCheck
	local := -1 // the index of the first local check
	for i, hc := range checks {
		if strings.TrimSpace(hc.Type) == "" {
			d.warn(fmt.Sprintf("%s[%d]", path, i), "has no type and is dropped, as BCS did")
			continue
		}
		if t := canon(hc.Type, CheckHTTP, CheckTCP, CheckCommand); t == CheckHTTP || t == CheckTCP || t == CheckCommand {
			if local >= 0 {
				d.warn(fmt.Sprintf("%s[%d]", path, i),
					"is dropped: a task runs one local check (HTTP, TCP or COMMAND), %s[%d] here, as BCS's scheduler ran only the first", path, local)
				continue
			}
			local = i
		}
		if hc.IntervalSeconds > 0 && hc.TimeoutSeconds >= hc.IntervalSeconds {
			d.warn(fmt.Sprintf("%s[%d].timeoutSeconds", path, i),
				"%d is not below intervalSeconds (%d): BCS's executor failed every launch of such a check; berth runs it, each probe after the previous one ended",
				hc.TimeoutSeconds, hc.IntervalSeconds)
		}
		kept = append(kept, hc)
	}
	return kept
}

// readServiceValues reads a service's type and its BCSBALANCE label, which BCS stored
// without a check: its templates write them as lists of alternatives ("ClusterIP|NodePort",
// "roundrobin|source|leastconn"). Each is read as its first alternative berth knows, or
// berth's default when none is, with a warning.
func readServiceValues(s *Service, d *decoder) {
	if t, why, ok := readAlternatives(s.Spec.Type, "ClusterIP", "ClusterIP", "None"); ok {
		d.warn("spec.type", "%q is read as %q (%s; BCS never checked a service's type)", truncate(s.Spec.Type, 60), t, why)
		s.Spec.Type = t
	}
	v, set := s.Metadata.Labels[BalanceLabel]
	if b, why, ok := readAlternatives(v, BalanceRoundRobin, BalanceRoundRobin, BalanceSource, BalanceLeastConn); set && ok {
		d.warn("metadata.labels."+BalanceLabel, "%q is read as %q (%s; BCS's load balancer never checked it)", truncate(v, 60), b, why)
		s.Metadata.Labels[BalanceLabel] = b
	}
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
