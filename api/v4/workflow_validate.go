package v4

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/berthhq/berth/api/v4/expr"
)

// Workflow limits. A workflow's spec is a user's input read by every server and
// expanded by the engine, so every count, size, loop and nesting is bounded at admission
// (docs/workflows.md, "Bounds").
const (
	MaxWfTemplates      = 200
	MaxWfStepsPerTmpl   = 1000 // steps of all groups of a steps template, or tasks of a dag
	MaxWfLoopItems      = 10000
	MaxWfNesting        = 30 // steps and dag templates calling templates
	maxWfParams         = 100
	maxWfArtifacts      = 50
	maxWfParamValue     = 64 << 10
	maxWfScriptSource   = 256 << 10
	maxWfExprLen        = expr.MaxLen
	maxWfPathLen        = 4096
	maxWfNameLen        = 63
	maxWfRetryLimit     = 1000
	maxWfDeadline       = 366 * 24 * 3600 // a year, in seconds
	maxWfParallelism    = 100000
	maxWfCommandArgs    = 64
	maxWfDescriptionLen = 1024
)

// wfNamePattern is the names of templates, steps, tasks, parameters and artifacts: words
// a depends expression and a "{{tasks.X...}}" reference can spell (no '.', no spaces).
var wfNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func checkWfName(p, name string, errs *FieldErrors) bool {
	switch {
	case name == "":
		errs.add(p, "required")
	case len(name) > maxWfNameLen || !wfNamePattern.MatchString(name):
		errs.add(p, "must be at most %d letters, digits, '_' and '-', starting with a letter or digit, got %q", maxWfNameLen, truncate(name, 80))
	default:
		return true
	}
	return false
}

// defaultWorkflowSpec fills the templates' tasks as a pod's are filled and the retry policy.
func defaultWorkflowSpec(s *WorkflowSpec) {
	defaultWfGC(s)
	defaultWfScheduling(s)
	for i := range s.Templates {
		t := &s.Templates[i]
		if t.Container != nil {
			pod := PodSpec{Containers: []Container{*t.Container}}
			defaultPod(&pod, KindApplication)
			*t.Container = pod.Containers[0]
		}
		if t.Process != nil {
			pod := PodSpec{Processes: []ProcessTask{*t.Process}}
			defaultPod(&pod, KindProcess)
			*t.Process = pod.Processes[0]
		}
		if r := t.RetryStrategy; r != nil {
			r.RetryPolicy = canon(r.RetryPolicy, RetryOnFailure, RetryOnError, RetryAlways)
			if r.RetryPolicy == "" {
				r.RetryPolicy = RetryOnFailure
			}
		}
	}
}

// validateWorkflowSpec checks a workflow's spec (or a workflowtemplate's: its entrypoint
// is optional, and its arguments are defaults a workflow may override).
func validateWorkflowSpec(s *WorkflowSpec, library bool, errs *FieldErrors) {
	validateWfScheduling(s, errs)
	if len(s.Templates) == 0 {
		errs.add("spec.templates", "required: at least one template")
		return
	}
	if len(s.Templates) > MaxWfTemplates {
		errs.add("spec.templates", "must have at most %d templates, got %d", MaxWfTemplates, len(s.Templates))
		return
	}
	byName := map[string]*WfTemplate{}
	for i := range s.Templates {
		t := &s.Templates[i]
		p := fmt.Sprintf("spec.templates[%d]", i)
		if checkWfName(p+".name", t.Name, errs) {
			if _, dup := byName[t.Name]; dup {
				errs.add(p+".name", "duplicate template %q", t.Name)
			}
			byName[t.Name] = t
		}
	}
	switch {
	case s.Entrypoint == "" && !library:
		errs.add("spec.entrypoint", "required: the name of the template to start with")
	case s.Entrypoint != "" && byName[s.Entrypoint] == nil:
		errs.add("spec.entrypoint", "unknown template %q", truncate(s.Entrypoint, 80))
	}
	if s.OnExit != "" && byName[s.OnExit] == nil {
		errs.add("spec.onExit", "unknown template %q", truncate(s.OnExit, 80))
	}
	checkRange("spec.parallelism", int64(s.Parallelism), maxWfParallelism, errs)
	checkRange("spec.activeDeadlineSeconds", s.ActiveDeadlineSeconds, maxWfDeadline, errs)
	validateConstraint("spec.constraint", s.Constraint, errs)
	if s.Shutdown != "" && s.Shutdown != ShutdownStop && s.Shutdown != ShutdownTerminate {
		errs.add("spec.shutdown", "must be %q or %q, got %q", ShutdownStop, ShutdownTerminate, truncate(s.Shutdown, 40))
	}
	validateWfGC(s, errs)
	wfParams := validateWfArguments("spec.arguments", s.Arguments, !library, errs)
	g := &wfGraph{spec: s, byName: byName, wfParams: wfParams, library: library, errs: errs}
	for i := range s.Templates {
		g.template(fmt.Sprintf("spec.templates[%d]", i), &s.Templates[i])
	}
	g.checkNesting()
}

func checkRange(p string, v, max int64, errs *FieldErrors) {
	if v < 0 || v > max {
		errs.add(p, "must be 0 to %d, got %d", max, v)
	}
}

// validateWfArguments checks arguments and returns the names of their parameters.
func validateWfArguments(p string, a *WfArguments, needValues bool, errs *FieldErrors) map[string]bool {
	names := map[string]bool{}
	if a == nil {
		return names
	}
	names = validateWfParams(p+".parameters", a.Parameters, errs)
	for i, prm := range a.Parameters {
		pp := fmt.Sprintf("%s.parameters[%d]", p, i)
		if needValues && prm.Value == nil && prm.Default == nil && prm.ValueFrom == nil {
			errs.add(pp+".value", "required: an argument gives a value")
		}
		if prm.Value != nil && len(prm.Enum) > 0 && !slicesContains(prm.Enum, *prm.Value) {
			errs.add(pp+".value", "must be one of its enum, got %q", truncate(*prm.Value, 80))
		}
	}
	validateWfArtifacts(p+".artifacts", a.Artifacts, false, errs)
	return names
}

func slicesContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// validateWfParams checks a list of parameters: names, sizes and the one source of an
// output's value. It returns the names.
func validateWfParams(p string, params []WfParameter, errs *FieldErrors) map[string]bool {
	names := map[string]bool{}
	if len(params) > maxWfParams {
		errs.add(p, "must have at most %d parameters, got %d", maxWfParams, len(params))
		return names
	}
	for i, prm := range params {
		pp := fmt.Sprintf("%s[%d]", p, i)
		if checkWfName(pp+".name", prm.Name, errs) {
			if names[prm.Name] {
				errs.add(pp+".name", "duplicate parameter %q", prm.Name)
			}
			names[prm.Name] = true
		}
		for _, v := range []struct {
			f string
			s *string
		}{{".value", prm.Value}, {".default", prm.Default}} {
			if v.s != nil && len(*v.s) > maxWfParamValue {
				errs.add(pp+v.f, "must be at most %d bytes, got %d", maxWfParamValue, len(*v.s))
			}
		}
		if len(prm.Enum) > maxWfParams {
			errs.add(pp+".enum", "must have at most %d values, got %d", maxWfParams, len(prm.Enum))
		}
		if len(prm.Description) > maxWfDescriptionLen {
			errs.add(pp+".description", "must be at most %d bytes", maxWfDescriptionLen)
		}
		validateWfValueFrom(pp+".valueFrom", prm.ValueFrom, errs)
	}
	return names
}

func validateWfValueFrom(p string, v *WfValueFrom, errs *FieldErrors) {
	if v == nil {
		return
	}
	n := 0
	for _, set := range []bool{v.Path != "", v.Stdout, v.Expression != "", v.Parameter != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs.add(p, "must set exactly one of path, stdout, expression and parameter")
	}
	if v.Path != "" {
		checkWfPath(p+".path", v.Path, errs)
	}
	if v.Expression != "" {
		checkWfWhen(p+".expression", v.Expression, errs)
	}
	if v.Default != nil && len(*v.Default) > maxWfParamValue {
		errs.add(p+".default", "must be at most %d bytes", maxWfParamValue)
	}
}

// checkWfPath checks a path inside a task: the agent (root) reads outputs from it and
// writes inputs to it, so it is absolute, clean and has no "..".
func checkWfPath(p, path string, errs *FieldErrors) {
	switch {
	case len(path) > maxWfPathLen || !printable.MatchString(path):
		errs.add(p, "must be at most %d characters without control characters", maxWfPathLen)
	case !strings.HasPrefix(path, "/"):
		errs.add(p, "must be an absolute path, got %q", truncate(path, 80))
	case slicesContains(strings.Split(path, "/"), ".."):
		errs.add(p, "must not contain '..', got %q", truncate(path, 80))
	}
}

func checkWfWhen(p, s string, errs *FieldErrors) {
	if len(s) > maxWfExprLen {
		errs.add(p, "must be at most %d bytes, got %d", maxWfExprLen, len(s))
		return
	}
	if _, err := expr.ParseWhen(s); err != nil {
		errs.add(p, "does not parse: %v", err)
	}
}

func validateWfArtifacts(p string, arts []WfArtifact, needPath bool, errs *FieldErrors) {
	if len(arts) > maxWfArtifacts {
		errs.add(p, "must have at most %d artifacts, got %d", maxWfArtifacts, len(arts))
		return
	}
	names := map[string]bool{}
	for i, a := range arts {
		ap := fmt.Sprintf("%s[%d]", p, i)
		if checkWfName(ap+".name", a.Name, errs) {
			if names[a.Name] {
				errs.add(ap+".name", "duplicate artifact %q", a.Name)
			}
			names[a.Name] = true
		}
		switch {
		case a.Path != "":
			checkWfPath(ap+".path", a.Path, errs)
		case needPath:
			errs.add(ap+".path", "required: where the artifact is in the task")
		}
		if len(a.From) > maxWfPathLen {
			errs.add(ap+".from", "must be at most %d bytes", maxWfPathLen)
		}
		if a.Mode < 0 || a.Mode > 0o777 {
			errs.add(ap+".mode", "must be a file mode 0 to 0777, got %#o", a.Mode)
		}
		if r := a.Repository; r != nil && (len(r.Name) > maxWfNameLen || len(r.Key) > maxWfPathLen ||
			strings.Contains(r.Key, "..") || !printable.MatchString(r.Key)) {
			errs.add(ap+".repository", "name at most %d characters, key at most %d without '..' or control characters", maxWfNameLen, maxWfPathLen)
		}
		validateWfArtifactSource(ap, &arts[i], errs)
	}
}

// ParseWfDuration reads a duration of a workflow: Go's ("30s", "1h5m") or whole seconds ("30").
func ParseWfDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > maxWfDeadline {
			return 0, fmt.Errorf("must be 0 to %d seconds, got %q", maxWfDeadline, s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxWfDeadline*time.Second {
		return 0, fmt.Errorf("must be a duration such as \"30s\" or \"5m\" up to a year, got %q", truncate(s, 40))
	}
	return d, nil
}
