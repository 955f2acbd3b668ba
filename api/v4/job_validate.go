package v4

import (
	"fmt"
	"slices"
)

// defaultJob fills a job's counts, completion mode and policies, and its template's pod
// defaults, so the stored job says what runs.
func defaultJob(j *Job) {
	_, j.KillPolicy = defaultPolicies(nil, j.KillPolicy)
	defaultConstraint(j.Constraint)
	defaultPod(&j.Spec.Template.Spec, podKind(&j.Spec.Template.Spec))
	s := &j.Spec
	for _, p := range []struct {
		v   **int
		def int
	}{{&s.Completions, 1}, {&s.Parallelism, 1}, {&s.BackoffLimit, DefaultBackoffLimit}} {
		if *p.v == nil {
			n := p.def
			*p.v = &n
		}
	}
	s.CompletionMode = canon(s.CompletionMode, CompletionNonIndexed, CompletionIndexed)
	if s.CompletionMode == "" {
		s.CompletionMode = CompletionNonIndexed
	}
	if fp := s.PodFailurePolicy; fp != nil {
		for i := range fp.Rules {
			r := &fp.Rules[i]
			r.Action = canon(r.Action, FailureFailJob, FailureIgnore, FailureCount)
			if r.OnExitCodes != nil {
				r.OnExitCodes.Operator = canon(r.OnExitCodes.Operator, OperatorIn, OperatorNotIn)
			}
		}
	}
}

func validateJob(j *Job, errs *FieldErrors) {
	if j.KillPolicy != nil {
		nonNegative("killPolicy.gracePeriod", j.KillPolicy.GracePeriod, errs)
	}
	validateConstraint("constraint", j.Constraint, errs)
	s := &j.Spec
	*errs = append(*errs, ValidateScheduling(&s.Scheduling, "spec")...)
	if m := s.Template.Metadata; m != nil {
		validateLabels("spec.template.metadata.labels", m.Labels, errs)
		validateLabels("spec.template.metadata.annotations", m.Annotations, errs)
	}
	validatePod("spec.template.spec", &s.Template.Spec, "", j.Metadata.Name, errs)
	boundedCount("spec.completions", s.Completions, 1, MaxCompletions, errs)
	boundedCount("spec.parallelism", s.Parallelism, 0, MaxParallelism, errs)
	boundedCount("spec.backoffLimit", s.BackoffLimit, 0, MaxBackoffLimit, errs)
	oneOf("spec.completionMode", s.CompletionMode, errs, CompletionNonIndexed, CompletionIndexed)
	if s.ActiveDeadlineSeconds < 0 || s.ActiveDeadlineSeconds > MaxJobDeadline {
		errs.add("spec.activeDeadlineSeconds", "must be between 1 and %d seconds (0 or absent: none), got %d", MaxJobDeadline, s.ActiveDeadlineSeconds)
	}
	boundedCount("spec.ttlSecondsAfterFinished", s.TTLSecondsAfterFinished, 0, MaxJobDeadline, errs)
	validateFailurePolicy("spec.podFailurePolicy", s.PodFailurePolicy, &s.Template.Spec, errs)
}

// boundedCount reports a set count outside [lo, hi].
func boundedCount(path string, v *int, lo, hi int, errs *FieldErrors) {
	if v != nil && (*v < lo || *v > hi) {
		errs.add(path, "must be between %d and %d, got %d", lo, hi, *v)
	}
}

func validateFailurePolicy(path string, fp *PodFailurePolicy, pod *PodSpec, errs *FieldErrors) {
	if fp == nil {
		return
	}
	if len(fp.Rules) > MaxFailureRules {
		errs.add(path+".rules", "must have at most %d rules, got %d", MaxFailureRules, len(fp.Rules))
		return
	}
	names := TaskNames(pod)
	for i, r := range fp.Rules {
		p := indexPath(path+".rules", i)
		oneOf(p+".action", r.Action, errs, FailureFailJob, FailureIgnore, FailureCount)
		req := r.OnExitCodes
		if req == nil {
			errs.add(p+".onExitCodes", "required: the exit codes the rule matches")
			continue
		}
		oneOf(p+".onExitCodes.operator", req.Operator, errs, OperatorIn, OperatorNotIn)
		if req.ContainerName != "" && !slices.Contains(names, req.ContainerName) {
			errs.add(p+".onExitCodes.containerName", "names no task of the template (tasks: %v), got %q", names, truncate(req.ContainerName, 80))
		}
		switch n := len(req.Values); {
		case n == 0:
			errs.add(p+".onExitCodes.values", "required: at least one exit code")
		case n > MaxFailureValues:
			errs.add(p+".onExitCodes.values", "must have at most %d exit codes, got %d", MaxFailureValues, n)
		}
		seen := map[int]bool{}
		for k, v := range req.Values {
			vp := indexPath(p+".onExitCodes.values", k)
			switch {
			case v < 0 || v > 255:
				errs.add(vp, "must be an exit code 0-255, got %d", v)
			case v == 0 && req.Operator == OperatorIn:
				errs.add(vp, "0 is success, never a failure: operator In cannot match it")
			case seen[v]:
				errs.add(vp, "%s", fmt.Sprintf("duplicate exit code %d", v))
			}
			seen[v] = true
		}
	}
}
