package v4

// Readiness says whether a task group should get a service's traffic, and why not: it
// must be Running, not asked to stop, and pass its health checks. A group whose checks
// have not answered yet (their delay or grace period) is not ready, as Kubernetes treats
// an unknown readiness; a group without checks is ready once Running. BCS put every
// Running instance in its endpoints whatever its health: berth does not.
func (t *TaskGroup) Readiness() (ready bool, reason string) {
	switch {
	case t.Status.Phase != StatusRunning:
		if t.Status.Phase == "" {
			return false, StatusStaging
		}
		return false, t.Status.Phase
	case t.Spec.Desired == DesiredStopped:
		return false, "stopping"
	case t.Status.Healthy != nil && !*t.Status.Healthy:
		for _, ts := range t.Status.Tasks {
			if ts.Healthy != nil && !*ts.Healthy {
				return false, "health check failing: " + ts.HealthMessage
			}
		}
		return false, "health check failing"
	case t.Status.Healthy == nil && hasLocalChecks(&t.Spec.Template.Spec):
		return false, "health not checked yet"
	}
	return true, ""
}

// hasLocalChecks reports whether a pod has health checks its agent runs.
func hasLocalChecks(p *PodSpec) bool {
	local := func(hs []HealthCheck) bool {
		for _, h := range hs {
			if h.Type == CheckHTTP || h.Type == CheckTCP || h.Type == CheckCommand {
				return true
			}
		}
		return false
	}
	for _, c := range p.Containers {
		if local(c.HealthChecks) {
			return true
		}
	}
	for _, t := range p.Processes {
		if local(t.HealthChecks) {
			return true
		}
	}
	return false
}
