package v4

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/berthhq/berth/api/v4/expr"
)

// wfGraph validates the templates of one spec and the calls between them.
type wfGraph struct {
	spec     *WorkflowSpec
	byName   map[string]*WfTemplate
	wfParams map[string]bool // the workflow's argument parameters ({{workflow.parameters.X}})
	library  bool            // a workflowtemplate: its parameters may come from the workflow
	errs     *FieldErrors
}

// template checks one template; its type decides the rest.
func (g *wfGraph) template(p string, t *WfTemplate) {
	errs := g.errs
	typ := t.Type()
	if typ == "" {
		errs.add(p, "must set exactly one of container, process, script, steps, dag and suspend")
		return
	}
	runs := typ == WfTypeContainer || typ == WfTypeProcess || typ == WfTypeScript
	sc := &refScope{g: g, tmpl: t}
	if in := t.Inputs; in != nil {
		sc.inputs = validateWfParams(p+".inputs.parameters", in.Parameters, errs)
		validateWfArtifacts(p+".inputs.artifacts", in.Artifacts, runs, errs)
		sc.inputArts = map[string]bool{}
		for _, a := range in.Artifacts {
			sc.inputArts[a.Name] = true
		}
	}
	checkRange(p+".activeDeadlineSeconds", t.ActiveDeadlineSeconds, maxWfDeadline, errs)
	checkRange(p+".parallelism", int64(t.Parallelism), maxWfParallelism, errs)
	validateConstraint(p+".constraint", t.Constraint, errs)
	validateWfRetry(p+".retryStrategy", t.RetryStrategy, errs)
	switch typ {
	case WfTypeContainer:
		validateContainer(p+".container", t.Container, "BRIDGE", map[string]string{}, map[int]string{}, errs)
		sc.checkJSON(p+".container", t.Container)
	case WfTypeProcess:
		validateProcessTask(p+".process", t.Process, map[string]string{}, map[int]string{}, errs)
		sc.checkJSON(p+".process", t.Process)
	case WfTypeScript:
		validateWfScript(p+".script", t.Script, errs)
		sc.checkJSON(p+".script", t.Script)
	case WfTypeSuspend:
		if d := t.Suspend.Duration; d != "" {
			if _, err := ParseWfDuration(d); err != nil {
				errs.add(p+".suspend.duration", "%v", err)
			}
		}
	case WfTypeSteps:
		g.steps(p+".steps", t, sc)
	case WfTypeDAG:
		g.dag(p+".dag", t, sc)
	}
	g.outputs(p+".outputs", t, runs, sc)
}

// outputs checks a template's outputs: a running template reads each from a path or its
// stdout; a steps or dag template passes on its children's.
func (g *wfGraph) outputs(p string, t *WfTemplate, runs bool, sc *refScope) {
	out := t.Outputs
	if out == nil {
		return
	}
	validateWfParams(p+".parameters", out.Parameters, g.errs)
	validateWfArtifacts(p+".artifacts", out.Artifacts, runs, g.errs)
	for i, prm := range out.Parameters {
		pp := fmt.Sprintf("%s.parameters[%d].valueFrom", p, i)
		v := prm.ValueFrom
		switch {
		case v == nil:
			g.errs.add(pp, "required: where the output's value comes from")
		case runs && v.Parameter != "":
			g.errs.add(pp+".parameter", "is for steps and dag templates; a task's output comes from a path or stdout")
		case !runs && (v.Path != "" || v.Stdout):
			g.errs.add(pp, "a steps or dag template has no task to read: use parameter or expression")
		case v.Parameter != "":
			sc.check(pp+".parameter", v.Parameter)
		case v.Expression != "":
			sc.check(pp+".expression", v.Expression)
		}
	}
	for i, a := range out.Artifacts {
		if a.Raw != nil || a.HTTP != nil || a.Git != nil {
			g.errs.add(fmt.Sprintf("%s.artifacts[%d]", p, i), "raw, http and git are sources of input artifacts, not outputs")
		}
		if !runs && a.From == "" {
			g.errs.add(fmt.Sprintf("%s.artifacts[%d].from", p, i), "required: the child artifact a steps or dag template passes on")
		}
		if a.From != "" {
			sc.check(fmt.Sprintf("%s.artifacts[%d].from", p, i), a.From)
		}
	}
}

func validateWfScript(p string, s *WfScript, errs *FieldErrors) {
	switch {
	case s.Source == "":
		errs.add(p+".source", "required")
	case len(s.Source) > maxWfScriptSource:
		errs.add(p+".source", "must be at most %d bytes, got %d", maxWfScriptSource, len(s.Source))
	}
	switch {
	case len(s.Command) == 0:
		errs.add(p+".command", "required: the interpreter, such as [\"python3\"] or [\"sh\"]")
	case len(s.Command) > maxWfCommandArgs:
		errs.add(p+".command", "must have at most %d entries, got %d", maxWfCommandArgs, len(s.Command))
	}
	for i, c := range s.Command {
		if len(c) > maxWfPathLen || !printable.MatchString(c) || c == "" {
			errs.add(fmt.Sprintf("%s.command[%d]", p, i), "must be 1 to %d characters without control characters", maxWfPathLen)
		}
	}
	if len(s.Image) > maxWfPathLen || !printable.MatchString(s.Image) || strings.ContainsAny(s.Image, " \t") {
		errs.add(p+".image", "must be an image reference, got %q", truncate(s.Image, 80))
	}
	validateEnv(p+".env", s.Env, errs)
	validateResources(p+".resources", s.Resources, false, errs)
}

func validateWfRetry(p string, r *WfRetryStrategy, errs *FieldErrors) {
	if r == nil {
		return
	}
	if r.Limit != nil {
		checkRange(p+".limit", int64(*r.Limit), maxWfRetryLimit, errs)
	}
	oneOf(p+".retryPolicy", r.RetryPolicy, errs, RetryOnFailure, RetryOnError, RetryAlways)
	b := r.Backoff
	if b == nil {
		return
	}
	for _, d := range []struct{ f, v string }{{".duration", b.Duration}, {".maxDuration", b.MaxDuration}} {
		if d.v == "" {
			continue
		}
		if _, err := ParseWfDuration(d.v); err != nil {
			errs.add(p+".backoff"+d.f, "%v", err)
		}
	}
	if b.Factor != 0 && (b.Factor < 1 || b.Factor > 100) {
		errs.add(p+".backoff.factor", "must be 1 to 100 (0: 2), got %g", b.Factor)
	}
}

// checkJSON checks the placeholders anywhere in a running template's task (its command,
// args, env, source), which see the template's inputs only.
func (sc *refScope) checkJSON(p string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	// JSON escapes neither '{' nor '}', so the placeholders are as written.
	sc.check(p, string(b))
}

// checkLoop checks a call's loop: at most one kind, and a literal size within the bound.
func checkLoop(p string, c *WfStep, sc *refScope, errs *FieldErrors) {
	n := 0
	for _, set := range []bool{len(c.WithItems) > 0, c.WithParam != "", c.WithSequence != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs.add(p, "must set at most one of withItems, withParam and withSequence")
	}
	if len(c.WithItems) > MaxWfLoopItems {
		errs.add(p+".withItems", "must have at most %d items, got %d", MaxWfLoopItems, len(c.WithItems))
	}
	if c.WithParam != "" {
		if phs, err := expr.Placeholders(c.WithParam); err != nil || len(phs) == 0 {
			if !strings.HasPrefix(strings.TrimSpace(c.WithParam), "[") {
				errs.add(p+".withParam", "must be a JSON list or a {{...}} reference to one")
			}
		}
		sc.check(p+".withParam", c.WithParam)
	}
	if s := c.WithSequence; s != nil {
		checkSequence(p+".withSequence", s, sc, errs)
	}
}
