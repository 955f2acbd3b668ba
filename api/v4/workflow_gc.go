package v4

import (
	"time"
)

// WfPodGC says when a workflow's steps' task groups are deleted (Argo's podGC). A step's
// record outlives its task group: its node status keeps its phase, times, exit code and
// outputs, and its main task's log is kept as its main-logs artifact
// (docs/workflows.md, "Finished workflows").
type WfPodGC struct {
	// Strategy is one of the WfPodGC* values; empty is WfPodGCOnWorkflowCompletion.
	Strategy string `json:"strategy,omitempty"`
	// DeleteDelayDuration waits this long (a Go duration, "30s") after the event the
	// strategy names before the task groups are deleted.
	DeleteDelayDuration string `json:"deleteDelayDuration,omitempty"`
}

// The strategies of WfPodGC.
const (
	// WfPodGCOnPodCompletion deletes a step's task group once its step ended.
	WfPodGCOnPodCompletion = "OnPodCompletion"
	// WfPodGCOnPodSuccess deletes a step's task group once its step succeeded.
	WfPodGCOnPodSuccess = "OnPodSuccess"
	// WfPodGCOnWorkflowCompletion deletes every step's task group once the workflow
	// ended: berth's default, so that a retained workflow holds no task groups.
	WfPodGCOnWorkflowCompletion = "OnWorkflowCompletion"
	// WfPodGCOnWorkflowSuccess does so only when the workflow succeeded.
	WfPodGCOnWorkflowSuccess = "OnWorkflowSuccess"
	// WfPodGCNever keeps the task groups until the workflow is deleted (Argo's default).
	WfPodGCNever = "Never"
)

// WfTTLStrategy deletes a finished workflow (Argo's ttlStrategy): after
// SecondsAfterSuccess when it succeeded, SecondsAfterFailure when it failed or erred,
// else after SecondsAfterCompletion.
type WfTTLStrategy struct {
	SecondsAfterCompletion *int `json:"secondsAfterCompletion,omitempty"`
	SecondsAfterSuccess    *int `json:"secondsAfterSuccess,omitempty"`
	SecondsAfterFailure    *int `json:"secondsAfterFailure,omitempty"`
}

// PodGCStrategy is the spec's task group strategy, berth's default when none is set.
func (s *WorkflowSpec) PodGCStrategy() string {
	if s.PodGC == nil || s.PodGC.Strategy == "" {
		return WfPodGCOnWorkflowCompletion
	}
	return s.PodGC.Strategy
}

// PodGCDelay is how long task groups wait for deletion after the strategy's event.
func (s *WorkflowSpec) PodGCDelay() time.Duration {
	if s.PodGC == nil || s.PodGC.DeleteDelayDuration == "" {
		return 0
	}
	d, err := time.ParseDuration(s.PodGC.DeleteDelayDuration)
	if err != nil || d < 0 { // refused at admission
		return 0
	}
	return d
}

// TTL is how long after it finished in phase a workflow is deleted, and whether it is.
func (t *WfTTLStrategy) TTL(phase string) (time.Duration, bool) {
	if t == nil {
		return 0, false
	}
	secs := t.SecondsAfterCompletion
	switch phase {
	case WfSucceeded:
		if t.SecondsAfterSuccess != nil {
			secs = t.SecondsAfterSuccess
		}
	case WfFailed, WfError:
		if t.SecondsAfterFailure != nil {
			secs = t.SecondsAfterFailure
		}
	}
	if secs == nil {
		return 0, false
	}
	return time.Duration(*secs) * time.Second, true
}

// defaultWfGC spells the strategy as berth does.
func defaultWfGC(s *WorkflowSpec) {
	if s.PodGC != nil {
		s.PodGC.Strategy = canon(s.PodGC.Strategy, WfPodGCOnPodCompletion, WfPodGCOnPodSuccess,
			WfPodGCOnWorkflowCompletion, WfPodGCOnWorkflowSuccess, WfPodGCNever)
	}
}

// validateWfGC checks podGC and ttlStrategy.
func validateWfGC(s *WorkflowSpec, errs *FieldErrors) {
	if g := s.PodGC; g != nil {
		switch g.Strategy {
		case "", WfPodGCOnPodCompletion, WfPodGCOnPodSuccess, WfPodGCOnWorkflowCompletion, WfPodGCOnWorkflowSuccess, WfPodGCNever:
		default:
			errs.add("spec.podGC.strategy", "must be one of %s, %s, %s, %s or %s, got %q", WfPodGCOnPodCompletion, WfPodGCOnPodSuccess,
				WfPodGCOnWorkflowCompletion, WfPodGCOnWorkflowSuccess, WfPodGCNever, truncate(g.Strategy, 40))
		}
		if g.DeleteDelayDuration != "" {
			d, err := time.ParseDuration(g.DeleteDelayDuration)
			if err != nil || d < 0 || d > maxWfDeadline*time.Second {
				errs.add("spec.podGC.deleteDelayDuration", "must be a duration from 0s to 8784h (\"30s\", \"1h\"), got %q", truncate(g.DeleteDelayDuration, 40))
			}
		}
	}
	if t := s.TTLStrategy; t != nil {
		boundedCount("spec.ttlStrategy.secondsAfterCompletion", t.SecondsAfterCompletion, 0, maxWfDeadline, errs)
		boundedCount("spec.ttlStrategy.secondsAfterSuccess", t.SecondsAfterSuccess, 0, maxWfDeadline, errs)
		boundedCount("spec.ttlStrategy.secondsAfterFailure", t.SecondsAfterFailure, 0, maxWfDeadline, errs)
	}
}
