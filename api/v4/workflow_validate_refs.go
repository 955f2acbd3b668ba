package v4

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"

	"github.com/berthhq/berth/api/v4/expr"
)

// refScope is what the "{{...}}" of one place may name: the template's inputs, the
// workflow's parameters, the loop's item, and the steps or tasks whose outputs exist
// by the time the place is evaluated.
type refScope struct {
	g         *wfGraph
	tmpl      *WfTemplate
	inputs    map[string]bool
	inputArts map[string]bool
	loop      bool
	prefix    string             // "steps" or "tasks": how children are named
	names     map[string]*WfStep // every step or task of the template
	sees      func(string) bool  // whether a step or task has finished before this place
}

// with returns a copy of sc for one call: its loop and the children it can see.
func (sc *refScope) with(loop bool, sees func(string) bool) *refScope {
	c := *sc
	c.loop, c.sees = loop, sees
	return &c
}

// seesNone is the scope of a place that sees no step or task.
func seesNone(string) bool { return false }

// check reports each placeholder of s that names nothing in scope.
func (sc *refScope) check(p, s string) {
	phs, err := expr.Placeholders(s)
	if err != nil {
		sc.g.errs.add(p, "%v", err)
		return
	}
	for _, ph := range phs {
		if err := sc.checkKey(ph.Key); err != nil {
			sc.g.errs.add(p, "{{%s}}: %v", truncate(ph.Key, 80), err)
		}
	}
}

var wfGlobals = map[string]bool{"workflow.name": true, "workflow.namespace": true, "workflow.uid": true,
	"workflow.status": true, "workflow.duration": true, "workflow.creationTimestamp": true,
	"workflow.failures": true, "workflow.mainEntrypoint": true, "retries": true, "node.name": true, "pod.name": true}

func (sc *refScope) checkKey(key string) error {
	parts := strings.Split(key, ".")
	switch {
	case wfGlobals[key]:
		return nil
	case parts[0] == "item":
		if !sc.loop {
			return fmt.Errorf("item is only defined in a loop (withItems, withParam or withSequence)")
		}
		return nil
	case len(parts) == 3 && parts[0] == "inputs" && parts[1] == "parameters":
		if !sc.inputs[parts[2]] {
			return fmt.Errorf("template %q has no input parameter %q", sc.tmpl.Name, parts[2])
		}
		return nil
	case (len(parts) == 3 || len(parts) == 4 && parts[3] == "path") && parts[0] == "inputs" && parts[1] == "artifacts":
		if !sc.inputArts[parts[2]] {
			return fmt.Errorf("template %q has no input artifact %q", sc.tmpl.Name, parts[2])
		}
		return nil
	case len(parts) == 3 && parts[0] == "workflow" && parts[1] == "parameters":
		if !sc.g.library && !sc.g.wfParams[parts[2]] {
			return fmt.Errorf("the workflow has no parameter %q in spec.arguments", parts[2])
		}
		return nil
	case len(parts) >= 3 && (parts[0] == "steps" || parts[0] == "tasks"):
		return sc.checkChild(parts)
	}
	return fmt.Errorf("unknown reference")
}

// checkChild checks "steps.X.…" or "tasks.X.…": X finished before this place, and its
// template has the output named.
func (sc *refScope) checkChild(parts []string) error {
	kind := map[string]string{"steps": "step", "tasks": "task"}[parts[0]]
	if parts[0] != sc.prefix {
		return fmt.Errorf("%s are only named inside a %s template", parts[0], map[string]string{"steps": "steps", "tasks": "dag"}[parts[0]])
	}
	name := parts[1]
	step, ok := sc.names[name]
	switch {
	case !ok:
		return fmt.Errorf("unknown %s %q", kind, name)
	case (sc.sees == nil || !sc.sees(name)) && kind == "step":
		return fmt.Errorf("step %q has not run yet here (only steps of earlier groups have outputs)", name)
	case sc.sees == nil || !sc.sees(name):
		return fmt.Errorf("task %q is not a dependency of this task (add it to dependencies or depends)", name)
	}
	rest := strings.Join(parts[2:], ".")
	switch rest {
	case "status", "exitCode", "id", "startedAt", "finishedAt", "outputs.parameters":
		return nil
	}
	called := sc.g.called(step)
	if called == nil { // a templateRef: admission checks it against the workflowtemplate
		return nil
	}
	switch {
	case rest == "outputs.result":
		if typ := called.Type(); typ != WfTypeContainer && typ != WfTypeProcess && typ != WfTypeScript {
			return fmt.Errorf("%s %q runs template %q, which has no standard output (a %s template)", kind, name, called.Name, typ)
		}
		return nil
	case len(parts) == 5 && parts[2] == "outputs" && (parts[3] == "parameters" || parts[3] == "artifacts"):
		if !hasWfOutput(called, parts[3], parts[4]) {
			return fmt.Errorf("%s %q runs template %q, which has no output %s %q", kind, name, called.Name, strings.TrimSuffix(parts[3], "s"), parts[4])
		}
		return nil
	}
	return fmt.Errorf("unknown reference to %s %q", kind, name)
}

func hasWfOutput(t *WfTemplate, what, name string) bool {
	if t.Resource != nil {
		return what == "parameters" && (name == WfResourceOutName || name == WfResourceOutVersion)
	}
	if t.Outputs == nil {
		return false
	}
	if what == "parameters" {
		for _, p := range t.Outputs.Parameters {
			if p.Name == name {
				return true
			}
		}
		return false
	}
	for _, a := range t.Outputs.Artifacts {
		if a.Name == name {
			return true
		}
	}
	return false
}

// called is the local template a step calls, or nil (a templateRef, or unknown).
func (g *wfGraph) called(s *WfStep) *WfTemplate {
	if s.TemplateRef != nil {
		return nil
	}
	return g.byName[s.Template]
}

// seqFormat is one integer verb with text around it: "%d", "%02d", "%x", "item-%03d".
var seqFormat = regexp.MustCompile(`^[^%]{0,60}%[-0]?[0-9]{0,2}[dxXo][^%]{0,60}$`)

func checkSequence(p string, s *WfSequence, sc *refScope, errs *FieldErrors) {
	if s.Count != "" && s.End != "" {
		errs.add(p, "must set count or end, not both")
	}
	if s.Format != "" && !seqFormat.MatchString(s.Format) {
		errs.add(p+".format", "must hold one integer verb (%%d, %%02d, %%x) and 120 other characters, got %q", truncate(s.Format, 80))
	}
	literal := true
	for _, f := range []struct{ n, v string }{{"count", s.Count}, {"start", s.Start}, {"end", s.End}} {
		if strings.Contains(f.v, "{{") {
			sc.check(p+"."+f.n, f.v)
			literal = false
		} else if _, err := strconv.ParseInt(orZero(f.v), 10, 64); err != nil {
			errs.add(p+"."+f.n, "must be an integer or a {{...}} reference, got %q", truncate(f.v, 40))
			literal = false
		}
	}
	if literal {
		if _, err := ExpandWfSequence(s.Count, s.Start, s.End, s.Format); err != nil {
			errs.add(p, "%v", err)
		}
	}
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// ExpandWfSequence lists a withSequence's items once its fields are known, at most
// MaxWfLoopItems of them.
func ExpandWfSequence(count, start, end, format string) ([]string, error) {
	lo, err1 := strconv.ParseInt(orZero(start), 10, 64)
	n, err2 := strconv.ParseInt(orZero(count), 10, 64)
	hi, err3 := strconv.ParseInt(orZero(end), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("count, start and end must be integers")
	}
	if format != "" && !seqFormat.MatchString(format) {
		return nil, fmt.Errorf("format must hold one integer verb")
	}
	if format == "" {
		format = "%d"
	}
	step := int64(1)
	switch {
	case count != "":
		if n < 0 || n > MaxWfLoopItems {
			return nil, fmt.Errorf("loops over %d items, more than %d", n, MaxWfLoopItems)
		}
		hi = lo + n - 1
	case hi < lo:
		step, n = -1, lo-hi+1
	default:
		n = hi - lo + 1
	}
	if n > MaxWfLoopItems || n < 0 {
		return nil, fmt.Errorf("loops over more than %d items", MaxWfLoopItems)
	}
	out := make([]string, 0, n)
	for i, v := int64(0), lo; i < n; i, v = i+1, v+step {
		out = append(out, fmt.Sprintf(format, v))
	}
	return out, nil
}

func cloneSet(m map[string]bool) map[string]bool { return maps.Clone(m) }

// inSet is a set's membership as a function.
func inSet(m map[string]bool) func(string) bool { return func(k string) bool { return m[k] } }
