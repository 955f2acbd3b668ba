package v4

import "slices"

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
	case t.Status.Ready != nil && !*t.Status.Ready:
		for _, ts := range t.Status.Tasks {
			if ts.Role != RoleInit && (ts.Ready == nil || !*ts.Ready) {
				if ts.ReadyMessage == "" {
					return false, "task " + ts.Name + " not ready yet"
				}
				return false, "task " + ts.Name + " not ready: " + ts.ReadyMessage
			}
		}
		return false, "not ready"
	case t.Status.Ready != nil:
		// The readiness checks decide; a liveness check does not take it out.
	case t.Status.Healthy != nil && !*t.Status.Healthy:
		for _, ts := range t.Status.Tasks {
			if ts.Healthy != nil && !*ts.Healthy {
				return false, "health check failing: " + ts.HealthMessage
			}
		}
		return false, "health check failing"
	case t.Status.Healthy == nil && hasChecks(&t.Spec.Template.Spec, localCheck):
		return false, "health not checked yet"
	}
	switch {
	case t.Status.Remote != nil && !t.Status.Remote.Healthy:
		return false, "remote health check failing: " + t.Status.Remote.Message
	case t.Status.Remote == nil && hasChecks(&t.Spec.Template.Spec, RemoteCheck):
		return false, "remote health not checked yet"
	}
	return true, ""
}

// localCheck reports whether a check runs on the agent.
func localCheck(h HealthCheck) bool {
	return h.Type == CheckHTTP || h.Type == CheckTCP || h.Type == CheckCommand
}

// RemoteCheck reports whether a check runs on the server (REMOTE_HTTP, REMOTE_TCP).
func RemoteCheck(h HealthCheck) bool {
	return h.Type == CheckRemoteHTTP || h.Type == CheckRemoteTCP
}

// hasChecks reports whether a task of the pod has a check that kind accepts.
func hasChecks(p *PodSpec, kind func(HealthCheck) bool) bool {
	return slices.ContainsFunc(p.HealthChecks(), kind)
}
